// GPU schedule of beam_candidates (dsl/kernels.hpp): chunk maxima by one thread
// per chunk (`threads` chunks per block), the log-sum-exp by one block per row
// with two-level reductions (rows.hpp).
#pragma once

#include "halformer/schedules/gpu/rows.hpp"

namespace halformer::schedules::gpu {

inline std::vector<knob_decl> candidates_knobs() { return row_knobs(); }

inline void beam_candidates(const dsl::lowering& ctx, Halide::Func chunk_max, Halide::Func top_log_prob,
                            const knob_values& k) {
  using namespace Halide;
  Var c("chunk"), t("t"), b("batch"), row("row"), cb("cb"), ct("ct");
  chunk_max.fuse(t, b, row).gpu_tile(c, cb, ct, k["threads"], TailStrategy::GuardWithIf);
  chunk_max.reorder(ct, cb, row).fuse(cb, row, cb).gpu_blocks(cb);
  ctx.stage("candidates_chunk_best").compute_at(chunk_max, ct);
  top_log_prob.fuse(t, b, row).gpu_blocks(row);
  detail::block_reduction(ctx.stage("candidates_log_prob_max"), ctx.rdom("candidates_log_prob"), top_log_prob, row, k);
  detail::block_reduction(ctx.stage("candidates_log_prob_sum"), ctx.rdom("candidates_log_prob"), top_log_prob, row, k);
}

} // namespace halformer::schedules::gpu
