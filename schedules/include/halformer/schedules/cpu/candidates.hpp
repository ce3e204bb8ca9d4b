// CPU schedule of beam_candidates (dsl/kernels.hpp): per logits row, every chunk's
// maximum and the log-sum-exp, `rows_per_task` rows per parallel task.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> candidates_knobs() {
  return {{"rows_per_task", {1, 2, 4, 8, 16, 32}, "rows per parallel task"}};
}

// A chunk's maximum is one vector reduction over its entries (64: 8 AVX2 or 4
// AVX-512 loads, a tree of maxima, one horizontal step; max is exact, so the
// order is free). The log-sum-exp's max and sum are vectorised as greedy_pick's.
inline void beam_candidates(const dsl::lowering& ctx, Halide::Func chunk_max, Halide::Func top_log_prob,
                            const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  Var c("chunk"), t("t"), b("batch"), row("row"), rt("rt");
  in(chunk_max).fuse(t, b, row).split(row, row, rt, k["rows_per_task"], TailStrategy::GuardWithIf).parallel(row);
  ctx.stage("candidates_chunk_best").compute_at(chunk_max, c);
  in.update(ctx.stage("candidates_chunk_best")).atomic().vectorize(ctx.rdom("candidates_chunk").x);
  Var t2("t"), b2("batch"), row2("row"), rt2("rt");
  in(top_log_prob)
      .fuse(t2, b2, row2)
      .split(row2, row2, rt2, k["rows_per_task"], TailStrategy::GuardWithIf)
      .parallel(row2);
  for (const char* s : {"candidates_log_prob_max", "candidates_log_prob_sum"}) {
    ctx.stage(s).compute_at(top_log_prob, rt2);
    if (!in.conditioned()) // rfactor rewrites the reduction for every branch: once, in the general one
      reduction_in_lanes(ctx.stage(s), ctx.rdom("candidates_log_prob"), vec).compute_at(top_log_prob, rt2);
  }
}

} // namespace halformer::schedules::cpu
