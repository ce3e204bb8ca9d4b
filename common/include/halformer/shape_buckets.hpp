// Shape buckets, defined once: the regimes a kernel runs in by the token rows t
// and the batch of its output. prefill (t > 1: the encoder, the decoder's first
// pass), decode (t == 1, batch > 1), decode1 (t == 1, batch == 1: a matrix-vector
// product for the GEMMs). The schedules specialise on them
// (schedules/buckets.hpp), the tuner files records by them, the tests cover them.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

namespace halformer {

inline const std::array<std::string, 3>& bucket_names() {
  static const std::array<std::string, 3> names{"prefill", "decode", "decode1"};
  return names;
}

inline std::string bucket_of(int t, int batch) { return t > 1 ? "prefill" : batch == 1 ? "decode1" : "decode"; }

} // namespace halformer
