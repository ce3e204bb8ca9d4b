// Shape buckets, defined once: the regimes a kernel runs in by the token rows t
// and the batch of its output. prefill (t > 1: the encoder, the decoder's first
// pass), decode (t == 1, 1 < batch < wide_decode_batch), decode1 (t == 1, batch
// == 1: a matrix-vector product for the GEMMs) and decode_wide (t == 1, batch >=
// wide_decode_batch). The schedules specialise on them (schedules/buckets.hpp),
// the tuner files records by them, the tests cover them.
#pragma once

#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace halformer {

// A decode step of this many rows or more (beam 4 over 16+ sentences) multiplies
// each weight it reads by 2 x batch FLOPs per 4 bytes, far past the FMA peak's
// share of the read bandwidth (Zen 3: 270 GFLOP/s against 23 GB/s, i.e. ~24
// rows; Zen 5: 540 against 50-60, ~20): it is bound by the multiply-adds and runs
// the panels over the batch rows (gemm.hpp), whose knobs a set tuned at the
// streaming decode step (8 rows) never exercised.
inline constexpr int wide_decode_batch = 64;

inline const std::array<std::string, 4>& bucket_names() {
  static const std::array<std::string, 4> names{"prefill", "decode", "decode1", "decode_wide"};
  return names;
}

// "prefill, decode, decode1, decode_wide", for messages.
inline std::string bucket_list() {
  std::string s;
  for (const auto& b : bucket_names())
    s += (s.empty() ? "" : ", ") + b;
  return s;
}

// Whether a call of extents (t, batch) is in `bucket`: the one definition of the
// boundaries, over int (the runtime's and the tuner's bucket_of) and over
// Halide::Expr (the schedules' specialize() conditions, schedules/buckets.hpp).
template <class E> auto in_bucket(const std::string& bucket, const E& t, const E& batch) {
  if (bucket == "prefill")
    return t > 1;
  if (bucket == "decode")
    return t == 1 && batch > 1 && batch < wide_decode_batch;
  if (bucket == "decode_wide")
    return t == 1 && batch >= wide_decode_batch;
  if (bucket == "decode1")
    return t == 1 && batch == 1;
  throw std::invalid_argument("unknown shape bucket '" + bucket + "' (known: " + bucket_list() + ")");
}

inline std::string bucket_of(int t, int batch) {
  for (const auto& b : bucket_names())
    if (in_bucket(b, t, batch))
      return b;
  throw std::invalid_argument("no shape bucket holds t = " + std::to_string(t) + ", batch = " + std::to_string(batch));
}

// The calls a schedule knob changes: every call, prefill alone (t > 1) or
// decode steps alone (t == 1: decode1, decode, decode_wide). The tuner searches
// at a shape only the knobs that change its calls there, and a build takes each
// knob's value from a record measured where it matters (tuner/export_knobs.cpp).
enum class knob_phase { any, prefill, decode };

inline const char* phase_name(knob_phase p) {
  return p == knob_phase::prefill ? "prefill" : p == knob_phase::decode ? "decode" : "any";
}
inline knob_phase phase_named(const std::string& name) {
  for (knob_phase p : {knob_phase::any, knob_phase::prefill, knob_phase::decode})
    if (name == phase_name(p))
      return p;
  throw std::invalid_argument("unknown knob phase '" + name + "' (any, prefill, decode)");
}
// Whether a knob of phase `p` changes the calls in `bucket`.
inline bool phase_covers(knob_phase p, const std::string& bucket) {
  return p == knob_phase::any || (p == knob_phase::prefill) == (bucket == "prefill");
}

} // namespace halformer
