// CPU schedules of the row-wise kernels: layernorm and softmax reduce along dim 0
// of (n, t, batch). Rows are independent: `rows_per_task` rows form one parallel
// task (a few rows amortise the thread-pool dispatch, ~1 us, over rows that take
// ~0.1-1 us each at d_model 512). Per-row statistics are computed at the row; their
// reductions are vectorised with atomic() (a tree sum: reassociation changes the
// result by a few ulp, within the tests' 1e-5 relative tolerance), and the
// elementwise output is vectorised `vectors` vectors wide. In vector lanes
// instead (cpu/lanes.hpp), as the longer rows of greedy_pick are, they were no
// faster: a decode step's rows wait on their input from memory (Zen 5, 2
// threads, harness medians of 5 interleaved rounds, one vector of lanes:
// layernorm at 8 rows 2.5 -> 2.3 us, 8 x 128 rows 0.163 -> 0.153 ms; softmax of
// 128 keys at 8 rows 1.7 -> 1.8 us, 8 x 128 rows 0.116 -> 0.120 ms, 7 keys 3.1
// -> 4.0 us; four vectors slower still: layernorm at 8 rows 2.8 us).
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> row_knobs() {
  return {
      {"rows_per_task", {1, 2, 4, 8, 16, 32, 64}, "rows per parallel task"},
      {"vectors", {1, 2, 4}, "vectors per step of the elementwise output"},
      {"vectorize_reductions", {0, 1}, "tree-vectorise the row reductions (reassociates)"},
  };
}

namespace detail {
// `out`'s rows in tasks, its features (`n`) in vectors; returns the loop over a
// task's rows, where each row's statistics are computed.
inline Halide::Var rows_loop(Halide::Func out, const std::string& n, const Halide::Expr& n_extent,
                             const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  Var x(n), xo("xo"), xi("xi");
  in_row_tasks(in(out), k["rows_per_task"]);
  const int w = vec * k["vectors"];
  in(out).specialize(n_extent >= w).split(x, xo, xi, w, TailStrategy::ShiftInwards).vectorize(xi, vec).unroll(xi);
  in(out).split(x, xo, xi, vec, TailStrategy::GuardWithIf).vectorize(xi);
  return row_in_task();
}
inline void reduction(Halide::Func f, const Halide::RDom& r, const Halide::Target& target, const knob_values& k,
                      const bucket_scope& in) {
  if (k["vectorize_reductions"])
    in.update(f).atomic().vectorize(r.x, target.natural_vector_size<float>(), Halide::TailStrategy::GuardWithIf);
}
} // namespace detail

inline void layernorm(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                      const bucket_scope& in) {
  const Halide::Var row = detail::rows_loop(out, "d_model", ctx.extent("d_model"), target, k, in);
  for (const char* s : {"norm_shift", "norm_sum", "norm_sqdev", "norm_rstd", "norm_mean"})
    ctx.stage(s).compute_at(out, row);
  // x + residual (add_layernorm) once per row, so every pass sees the same float sums.
  if (ctx.has_stage("sum")) {
    ctx.stage("sum").compute_at(out, row);
    in(ctx.stage("sum"))
        .vectorize(Halide::Var("d_model"), target.natural_vector_size<float>(), Halide::TailStrategy::GuardWithIf);
  }
  detail::reduction(ctx.stage("norm_sum"), ctx.rdom("norm"), target, k, in);
  detail::reduction(ctx.stage("norm_sqdev"), ctx.rdom("norm"), target, k, in);
}

inline void softmax(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                    const bucket_scope& in) {
  const Halide::Var row = detail::rows_loop(out, "tk", ctx.extent("tk"), target, k, in);
  const int vec = target.natural_vector_size<float>();
  for (const char* s : {"softmax_max", "softmax_sum"})
    ctx.stage(s).compute_at(out, row);
  ctx.stage("softmax_exp").compute_at(out, row);
  in(ctx.stage("softmax_exp")).vectorize(Halide::Var("tk"), vec, Halide::TailStrategy::GuardWithIf);
  detail::reduction(ctx.stage("softmax_max"), ctx.rdom("softmax"), target, k, in);
  detail::reduction(ctx.stage("softmax_sum"), ctx.rdom("softmax"), target, k, in);
}

} // namespace halformer::schedules::cpu
