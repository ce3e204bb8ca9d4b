// CPU schedules of the decoders' choices per logits row (dsl/kernels.hpp),
// `rows_per_task` rows per parallel task, the long reductions over the
// vocabulary in vector lanes (cpu/lanes.hpp): greedy_pick (the best id: the
// maximum, then the lowest index holding it; the log-sum-exp) and
// beam_candidates (every chunk's maximum and the log-sum-exp).
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"

namespace halformer::schedules::cpu {

// The knobs of both kernels.
inline std::vector<knob_decl> candidates_knobs() {
  return {{"rows_per_task", {1, 2, 4, 8, 16, 32}, "rows per parallel task"}};
}

// Max and min are exact in any order; the sum reassociates (within the tests'
// tolerance). Zen 5, 2 threads, harness medians of 3 interleaved rounds, 32000
// logits: batch 1 13.9 -> 9.8 us, batch 8 64.5 -> 49.2 us.
inline void greedy_pick(const dsl::lowering& ctx, Halide::Func ids, Halide::Func log_probs,
                        const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  for (Func out : {ids, log_probs})
    in_row_tasks(in(out), k["rows_per_task"]);
  struct reduction {
    Func out;
    const char *stage, *rdom;
  };
  for (const auto& [out, stage, rdom] : {reduction{ids, "pick_id_max", "pick_id"},
                                         {ids, "pick_id_first", "pick_id"},
                                         {log_probs, "pick_log_prob_max", "pick_log_prob"},
                                         {log_probs, "pick_log_prob_sum", "pick_log_prob"}}) {
    Func f = ctx.stage(stage);
    f.compute_at(out, row_in_task());
    if (!in.conditioned()) // rfactor rewrites the reduction for every branch: once, in the general one
      reduction_in_lanes(f, ctx.rdom(rdom), vec, 4).compute_at(out, row_in_task());
  }
}

// A chunk's maximum is one vector reduction over its entries (64: 8 AVX2 or 4
// AVX-512 loads, a tree of maxima, one horizontal step; max is exact, so the
// order is free). The log-sum-exp's max and sum as greedy_pick's.
inline void beam_candidates(const dsl::lowering& ctx, Halide::Func chunk_max, Halide::Func top_log_prob,
                            const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  in_row_tasks(in(chunk_max), k["rows_per_task"]);
  ctx.stage("candidates_chunk_best").compute_at(chunk_max, Var("chunk"));
  in.update(ctx.stage("candidates_chunk_best")).atomic().vectorize(ctx.rdom("candidates_chunk").x);
  in_row_tasks(in(top_log_prob), k["rows_per_task"]);
  for (const char* s : {"candidates_log_prob_max", "candidates_log_prob_sum"}) {
    ctx.stage(s).compute_at(top_log_prob, row_in_task());
    if (!in.conditioned()) // rfactor rewrites the reduction for every branch: once, in the general one
      reduction_in_lanes(ctx.stage(s), ctx.rdom("candidates_log_prob"), vec, 4).compute_at(top_log_prob, row_in_task());
  }
}

} // namespace halformer::schedules::cpu
