// CPU schedule of sample_pick (dsl/lower_sampling.hpp): `rows_per_task` rows per
// parallel task. Per row the allowed logits are written once (128 KiB at 32000
// entries, in L2 for the row's passes); every sum over the vocabulary, the
// threshold searches' among them, runs in vector lanes (lanes.hpp), each chunk's
// sums as one vector reduction, and the walks over the chunks and over one chunk
// are scalar. The log-probability reads the logits in its own row tasks.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/candidates.hpp"
#include "halformer/schedules/cpu/lanes.hpp"

namespace halformer::schedules::cpu {

// As the other decode choices': rows per parallel task.
inline std::vector<knob_decl> sampling_knobs() { return candidates_knobs(); }

inline void sample_pick(const dsl::lowering& ctx, Halide::Func ids, Halide::Func log_probs,
                        const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  const Var rt = row_in_task();
  Func sample = ctx.stage("sample");
  sample.compute_root();
  in_row_tasks(in(sample), k["rows_per_task"]);
  // Its range check's message goes to the calling thread (the runtime's error
  // text is per thread), so not in the parallel row tasks.
  ctx.stage("sample_forced").compute_root();
  Func allowed = ctx.stage("sample_allowed");
  allowed.compute_at(sample, rt);
  in(allowed).vectorize(Var("vocab"), vec, TailStrategy::GuardWithIf);
  if (!in.conditioned())
    for (int u = 0; u < 2; ++u) // the lists' scatters: a few stores per row
      allowed.update(u).unscheduled();
  for (const char* s : {"sample_keys", "sample_weights"})
    in(ctx.stage(s).compute_at(sample, rt)).vectorize(Var("vocab"), vec, TailStrategy::GuardWithIf);
  for (const std::string& s : dsl::sampling::row_sums("sample")) {
    ctx.stage(s).compute_at(sample, rt);
    if (!in.conditioned()) // rfactor rewrites the reduction for every branch: once, in the general one
      reduction_in_lanes(ctx.stage(s), ctx.rdom(s), vec, 4).compute_at(sample, rt);
  }
  for (int i = 0; i < dsl::sampling::search_steps; ++i)
    for (const char* search : {"sample_topk_bound_", "sample_topp_bound_", "sample_topk_mid_", "sample_topp_mid_"})
      ctx.stage(search + std::to_string(i)).compute_at(sample, rt);
  for (const char* s : {"sample_chunk_mass", "sample_chunk_ties"}) {
    ctx.stage(s).compute_at(sample, rt);
    in.update(ctx.stage(s)).atomic().vectorize(ctx.rdom("sample_chunk").x);
  }
  for (const char* s : {"sample_scan", "sample_first", "sample_last", "sample_walk"})
    ctx.stage(s).compute_at(sample, rt);
  in_row_tasks(in(log_probs), k["rows_per_task"]);
  for (const char* s : {"sample_log_prob_max", "sample_log_prob_sum"}) {
    ctx.stage(s).compute_at(log_probs, rt);
    if (!in.conditioned())
      reduction_in_lanes(ctx.stage(s), ctx.rdom("sample_log_prob"), vec, 4).compute_at(log_probs, rt);
  }
  if (!in.conditioned())
    ctx.stage("sample_log_prob_max").update(1).unscheduled(); // the listed tokens: a few per row
  ctx.stage("sample_log_prob_fix").compute_at(log_probs, rt);
}

} // namespace halformer::schedules::cpu
