// GPU schedules of the row-wise kernels (layernorm, softmax) and the embedding.
//
// One thread block per row (the rows are d_model or vocab wide, reduced along
// dim 0): `threads` threads stride across the row. Each row reduction is split
// with rfactor into `threads` partial results computed in parallel and kept in
// shared memory (threads x 4 B), then summed by one thread: a two-level tree sum
// that reassociates, like the CPU's atomic() vectorisation (a few ulp).
// Per-row scalars (mean, rstd, max, sum) are inlined: recomputing a sqrt or a log
// per element is cheaper than a barrier.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/knobs.hpp"

namespace halformer::schedules::gpu {

inline std::vector<knob_decl> row_knobs() {
  return {
      {"threads", {32, 64, 128, 256, 512}, "threads per block (one block per row)"},
  };
}

namespace detail {
// out(n, t, batch): one block per (t, batch) row, threads striding along n.
inline void rows_blocks(Halide::Func out, const std::string& n, const knob_values& k, Halide::Var& row,
                        Halide::Var& thread) {
  using namespace Halide;
  Var x(n), t("t"), b("batch"), xo("xo");
  out.fuse(t, b, row)
      .split(x, xo, thread, k["threads"], TailStrategy::GuardWithIf)
      .reorder(xo, thread, row)
      .gpu_blocks(row)
      .gpu_threads(thread);
}

// f(rows) += g(r.x, rows): partial sums over `threads` lanes at block level, then one
// thread merges them.
inline void block_reduction(Halide::Func f, const Halide::RDom& r, Halide::Func out, const Halide::Var& row,
                            const knob_values& k) {
  using namespace Halide;
  RVar ro("ro"), ri("ri");
  Var u("u");
  f.compute_at(out, row);
  Func partial = f.update().split(r.x, ro, ri, k["threads"], TailStrategy::GuardWithIf).rfactor(ri, u);
  partial.compute_at(out, row).gpu_threads(u);
  partial.update().gpu_threads(u);
}
} // namespace detail

inline void layernorm(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  Halide::Var row("row"), thread("thread");
  detail::rows_blocks(out, "d_model", k, row, thread);
  if (ctx.has_stage("sum")) { // x + residual, once per row in shared memory
    Halide::Var x("d_model"), xo("xo"), xi("xi");
    ctx.stage("sum")
        .compute_at(out, row)
        .split(x, xo, xi, k["threads"], Halide::TailStrategy::GuardWithIf)
        .reorder(xo, xi)
        .gpu_threads(xi);
  }
  detail::block_reduction(ctx.stage("norm_sum"), ctx.rdom("norm"), out, row, k);
  detail::block_reduction(ctx.stage("norm_sqdev"), ctx.rdom("norm"), out, row, k);
}

inline void softmax(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  Halide::Var row("row"), thread("thread");
  detail::rows_blocks(out, "tk", k, row, thread);
  detail::block_reduction(ctx.stage("softmax_max"), ctx.rdom("softmax"), out, row, k);
  detail::block_reduction(ctx.stage("softmax_sum"), ctx.rdom("softmax"), out, row, k);
}

inline std::vector<knob_decl> embedding_knobs() { return row_knobs(); }

inline void embedding(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  using namespace Halide;
  Var row("row"), thread("thread"), d("d_model"), t("t"), dt("dt"), tt("tt"), db("db"), tb("tb");
  detail::rows_blocks(out, "d_model", k, row, thread);
  ctx.stage("rows_ids").compute_root();
  ctx.stage("positions")
      .compute_root()
      .gpu_tile(d, t, db, tb, dt, tt, std::min(k["threads"], 128), 1, TailStrategy::GuardWithIf);
}

// greedy_pick: one block per row, each of its reductions (the maximum and the
// lowest index holding it; the log-sum-exp) two-level as softmax's.
inline std::vector<knob_decl> pick_knobs() { return row_knobs(); }
inline void greedy_pick(const dsl::lowering& ctx, Halide::Func ids, Halide::Func log_probs, const knob_values& k) {
  using namespace Halide;
  Var t("t"), b("batch"), row("row");
  ids.fuse(t, b, row).gpu_blocks(row);
  detail::block_reduction(ctx.stage("pick_id_max"), ctx.rdom("pick_id"), ids, row, k);
  detail::block_reduction(ctx.stage("pick_id_first"), ctx.rdom("pick_id"), ids, row, k);
  log_probs.fuse(t, b, row).gpu_blocks(row);
  detail::block_reduction(ctx.stage("pick_log_prob_max"), ctx.rdom("pick_log_prob"), log_probs, row, k);
  detail::block_reduction(ctx.stage("pick_log_prob_sum"), ctx.rdom("pick_log_prob"), log_probs, row, k);
}

} // namespace halformer::schedules::gpu
