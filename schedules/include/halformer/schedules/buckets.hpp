// Shape buckets: one pipeline per kernel, one specialize() branch per knob set.
//
// A kernel runs in four regimes of the (t, batch) of its output: prefill (t > 1,
// the encoder and the decoder's first pass), decode (t == 1, 1 < batch < 64),
// decode1 (t == 1, batch == 1) and decode_wide (t == 1, batch >= 64;
// halformer/shape_buckets.hpp). A knob file may hold a knob set per bucket (section
// "_buckets", written by the tuner); each distinct set becomes a branch of the one
// Halide pipeline, selected by the call's extents, as Halide's linear_algebra GEMV
// and hannk's fully_connected specialise by shape. A bucket without its own set runs
// the section's values (common/bucket_knobs.hpp says why); buckets whose set equals
// decode's share its branch, so a build without per-bucket values has no extra code.
//
// A schedule applies every directive through its bucket_scope, so that each knob set
// schedules its own specialization of every Func. Compute levels (compute_at,
// compute_root) are per Func, shared by every branch: Halide requires the loop a
// Func is computed at to exist in every branch, which holds because each branch runs
// the same schedule code with other numbers.
#pragma once

#include "halformer/schedules/knobs.hpp"
#include "halformer/shape_buckets.hpp"

#include <Halide.h>

#include <array>
#include <map>
#include <string>
#include <vector>

namespace halformer::schedules {

using halformer::bucket_names;
using halformer::bucket_of;
using halformer::wide_decode_batch;

// The condition under which a call of extents (t, batch) is in `bucket`.
inline Halide::Expr bucket_condition(const std::string& bucket, const Halide::Expr& t, const Halide::Expr& batch) {
  return in_bucket(bucket, t, batch);
}

// Where a schedule's directives go: the Func's own schedule (the general branch),
// or its specialization for one bucket's condition.
class bucket_scope {
public:
  bucket_scope() = default;
  explicit bucket_scope(Halide::Expr condition) : condition_(std::move(condition)) {}
  Halide::Stage operator()(const Halide::Func& f) const {
    return condition_.defined() ? Halide::Func(f).specialize(condition_) : Halide::Stage(f);
  }
  // Whether this is a bucket's specialization (not the general branch).
  bool conditioned() const { return condition_.defined(); }
  Halide::Stage update(const Halide::Func& f, int i = 0) const {
    Halide::Stage u = Halide::Func(f).update(i);
    return condition_.defined() ? u.specialize(condition_) : u;
  }

private:
  Halide::Expr condition_; // undefined: the general branch
};

// One branch of a kernel's pipeline: the buckets it serves and their knob set.
struct bucket_branch {
  std::vector<std::string> buckets;
  Halide::Expr condition; // undefined for the last branch, which takes every other call
  knob_values knobs;
};

namespace detail {
inline bool same_values(const knob_values& a, const knob_values& b) { return a.all() == b.all(); }
} // namespace detail

// The branches for a kernel's knob sets by bucket (empty: `general` alone). The
// decode bucket's set is the general branch (the last, unconditioned), which also
// serves every bucket with an equal set; each other bucket with a set of its own
// is a branch on its plain condition. (Two such buckets with equal sets stay two
// branches: a disjunction of conditions would hide from Halide's simplifier that
// the schedule's inner branches for other regimes cannot run there, and it would
// then compile them with non-constant extents.) Algorithm knobs
// (knob_decl::algorithm) shape the algorithm, one per pipeline: every set must
// agree on them.
inline std::vector<bucket_branch> plan_branches(const std::string& kernel, const std::vector<knob_decl>& decls,
                                                const std::map<std::string, knob_values>& by_bucket,
                                                const knob_values& general, const Halide::Expr& t,
                                                const Halide::Expr& batch) {
  if (by_bucket.empty())
    return {{{bucket_names().begin(), bucket_names().end()}, {}, general}};
  const auto set_of = [&](const std::string& bucket) -> const knob_values& {
    const auto own = by_bucket.find(bucket);
    return own != by_bucket.end() ? own->second : general;
  };
  const knob_values& decode = set_of("decode");
  std::vector<bucket_branch> branches;
  bucket_branch rest{{"decode"}, {}, decode};
  for (const auto& b : bucket_names()) {
    if (b == "decode")
      continue;
    if (detail::same_values(set_of(b), decode))
      rest.buckets.push_back(b);
    else
      branches.push_back({{b}, bucket_condition(b, t, batch), set_of(b)});
  }
  for (const auto& d : decls)
    if (d.algorithm)
      for (const auto& br : branches)
        if (br.knobs[d.name] != decode[d.name])
          throw std::runtime_error(kernel + ": algorithm knob '" + d.name + "' differs between bucket " +
                                   br.buckets.front() + " (" + std::to_string(br.knobs[d.name]) +
                                   ") and bucket decode (" + std::to_string(decode[d.name]) +
                                   "): one pipeline has one algorithm");
  branches.push_back(rest);
  return branches;
}

} // namespace halformer::schedules
