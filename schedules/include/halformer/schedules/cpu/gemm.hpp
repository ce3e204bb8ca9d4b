// The register-blocked x86 schedule every GEMM-shaped stage uses (projections, FFN,
// logits), after Halide's test/performance/matrix_multiplication.cpp: the output
// feature is innermost and vectorised `vectors` vectors wide, `rows` rows are
// unrolled, so vectors x rows accumulators stay in registers for the whole
// reduction; each parallel task owns `tiles_per_task` column tiles of one row block,
// so its rows of the input are read from L1 while the weight panel streams.
//
// Register budget: AVX-512 has 32 zmm: 3 x 8 = 24 accumulators + 3 weight vectors +
// 1 broadcast = 28. AVX2 and SSE4.1 have 16: 3 x 4 = 12 + 3 + 1 = 16.
//
// Shapes that cannot fill one register tile (features < vectors x lanes, or fewer
// rows than `rows`) take a predicated fallback; decode steps (t == 1) block over the
// batch instead of t.
#pragma once

#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/gemm_stages.hpp"

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> gemm_knobs() {
  return {
      {"vectors", {1, 2, 3, 4}, "output-feature vectors per register tile"},
      {"rows", {1, 2, 3, 4, 6, 8}, "rows per register tile (unrolled)"},
      {"tiles_per_task", {1, 2, 4, 8, 16, 32}, "column tiles per parallel task"},
      {"row_tiles_per_task", {1, 2, 4, 8, 16, 32}, "row tiles per parallel task (weight panel reuse)"},
      {"gemv_cols",
       {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
       "decode GEMV: features per task (heads: gemv_cols / d_k heads)"},
      {"gemv_k", {2, 4, 8, 16, 32, 64, 128}, "decode GEMV: weight rows per register chunk"},
      {"gemv_vectors", {1, 2, 4, 8}, "decode GEMV: accumulator vectors per register tile"},
  };
}

// The decode GEMV's reduction: the `by_gemv` specialisation of g.acc's update,
// computed at the output's column-block tasks. It is bound by streaming the
// weights, whose rows (one reduction index each) are contiguous over the
// features: per chunk of `gemv_k` rows and tile of `gemv_vectors` vectors, the
// tile's accumulators stay in registers while the chunk's rows stream in side by
// side, gemv_cols features long each. Wide blocks and short chunks give the
// prefetchers long runs: logits at one row (32000 x 512) 2.9 -> 2.3 ms with 16384
// features per task and 4-row chunks instead of 512 and 16 (2 threads, AVX-512,
// weights from memory, interleaved; the machine streams ~32 GB/s).
// Every output still sums its rows in order, as the blocked branches do, so a
// row's result is bitwise the same whichever branch (batch size) computes it.
// (A split-K variant, slices of rows summed by separate tasks, measured no faster
// at 512 x 512 and would break that.) The gemv_* knobs belong to this branch
// alone: each decode variant takes them from its bucket's tuned record
// (export_knobs.cpp).
inline void schedule_gemv(gemm_stage g, const Halide::Expr& by_gemv, int vec, const knob_values& k,
                          const bucket_scope& in) {
  using namespace Halide;
  RVar ko("ko"), ki("ki");
  Var ot("ot"), ov("ov");
  in(g.acc).specialize(by_gemv).vectorize(g.o, vec, TailStrategy::GuardWithIf);
  Stage u = in.update(g.acc).specialize(by_gemv);
  // Chunks of the innermost reduction dim (out_projection: d_k within a head).
  u.split(g.o, ot, ov, vec * k["gemv_vectors"], TailStrategy::GuardWithIf)
      .split(g.r[0], ko, ki, k["gemv_k"], TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{ov, ki, ot};
  order.insert(order.end(), g.mid.begin(), g.mid.end());
  order.push_back(g.t);
  order.push_back(g.batch);
  order.push_back(ko);
  order.insert(order.end(), g.r.begin() + 1, g.r.end());
  u.reorder(order).vectorize(ov, vec).unroll(ov);
}

namespace detail {
// Dims outside the register tile that join the parallel task loop. When tiling
// over the batch (t == 1), t stays a serial loop of extent 1: fusing it would make
// bounds inference divide by the task count and lose its exact bounds.
inline std::vector<Halide::Var> fused_outer(const gemm_stage& g, const Halide::Var& row) {
  std::vector<Halide::Var> dims = g.mid;
  if (row.name() != g.batch.name())
    dims.push_back(g.batch);
  return dims;
}

// One register-blocked branch tiling (o, row). A task owns `tiles_per_task` column
// tiles x `row_tiles_per_task` row tiles; its loop over row tiles (rr) sits outside
// the loop over column tiles (oo), so the task's weight panel (group x tile_o x K
// floats) is reused from L2 by every row tile, and each row tile's inputs from L1
// by every column tile.
inline void schedule_blocked(const gemm_stage& g, Halide::Stage s, const Halide::Var& row, int vec,
                             const knob_values& k) {
  using namespace Halide;
  Var oc("oc"), oi("oi"), oo("oo"), og("og"), ro("ro"), ri("ri"), rr("rr"), rg("rg"), task("task");
  std::vector<VarOrRVar> order{oi, ri, oo, rr, og, rg};
  for (const Var& d : fused_outer(g, row))
    order.push_back(d);
  if (row.name() == g.batch.name())
    order.push_back(g.t);
  s.split(g.o, oc, oi, k["vectors"] * vec, TailStrategy::ShiftInwards)
      .split(oc, og, oo, k["tiles_per_task"], TailStrategy::GuardWithIf)
      .split(row, ro, ri, k["rows"], TailStrategy::ShiftInwards)
      .split(ro, rg, rr, k["row_tiles_per_task"], TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(oi, vec)
      .unroll(oi)
      .unroll(ri)
      .fuse(og, rg, task);
  for (const Var& d : fused_outer(g, row))
    s.fuse(task, d, task);
  s.parallel(task);
}
inline void schedule_blocked_acc(const gemm_stage& g, Halide::Stage pure, Halide::Stage update, const Halide::Var& row,
                                 int vec) {
  pure.vectorize(g.o, vec).unroll(g.o).unroll(row);
  std::vector<Halide::VarOrRVar> order{g.o, row};
  for (const auto& r : g.r)
    order.push_back(r);
  update.reorder(order).vectorize(g.o, vec).unroll(g.o).unroll(row);
}

// Decode steps with fewer rows than a register tile (t == 1, batch < rows): a
// matrix-vector product, bound by streaming the weights (schedule_gemv() above). The
// output's tasks own `gemv_cols` output features each (head projections:
// gemv_cols / d_k heads, whose weights are contiguous; d_k is the call's, so the
// task size in features holds for any head width).
inline void schedule_gemv_output(const gemm_stage& g, Halide::Stage s, int vec, const knob_values& k) {
  using namespace Halide;
  Var oo("oo"), oi("oi"), hi("hi");
  const int cols = k["gemv_cols"];
  if (g.mid.empty())
    s.split(g.o, oo, oi, cols, TailStrategy::GuardWithIf).reorder(oi, g.t, g.batch, oo).vectorize(oi, vec).parallel(oo);
  else // mid = {heads}: tasks over groups of heads ("oo", the accumulator's level)
    s.split(g.mid[0], oo, hi, Halide::max(1, cols / g.o_extent), TailStrategy::GuardWithIf)
        .reorder(g.o, g.t, hi, g.batch, oo)
        .vectorize(g.o, vec, TailStrategy::GuardWithIf)
        .parallel(oo);
}

// Fallback: one predicated vector per step, parallel over column groups and rows.
inline void schedule_fallback(const gemm_stage& g, Halide::Stage s, int vec, const knob_values& k) {
  using namespace Halide;
  Var oc("oc"), oi("oi"), oo("oo"), og("og"), task("task");
  std::vector<VarOrRVar> order{oi, oo, og, g.t};
  for (auto& d : g.mid)
    order.push_back(d);
  order.push_back(g.batch);
  s.split(g.o, oc, oi, vec, TailStrategy::GuardWithIf)
      .split(oc, og, oo, k["tiles_per_task"] * k["vectors"], TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(oi)
      .fuse(og, g.t, task);
  for (auto& d : g.mid)
    s.fuse(task, d, task);
  s.fuse(task, g.batch, task).parallel(task);
}
} // namespace detail

// The GEMM's branches by shape: blocked over t (prefill), blocked over the batch
// (decode, batch >= rows), the GEMV (decode, fewer rows), else the fallback; the
// accumulator is computed per output task ("oo") in each.
inline void schedule_gemm(gemm_stage g, const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>(), rows = k["rows"];
  const Expr full_cols = g.o_extent >= k["vectors"] * vec;
  const Expr by_t = full_cols && g.t_extent >= rows;
  const Expr by_batch = full_cols && g.t_extent == 1 && g.batch_extent >= rows;
  const Expr by_gemv = g.t_extent == 1 && g.batch_extent < rows;

  detail::schedule_blocked(g, in(g.out).specialize(by_t), g.t, vec, k);
  detail::schedule_blocked(g, in(g.out).specialize(by_batch), g.batch, vec, k);
  detail::schedule_gemv_output(g, in(g.out).specialize(by_gemv), vec, k);
  detail::schedule_fallback(g, in(g.out), vec, k);

  g.acc.compute_at(g.out, Var("oo"));
  detail::schedule_blocked_acc(g, in(g.acc).specialize(by_t), in.update(g.acc).specialize(by_t), g.t, vec);
  detail::schedule_blocked_acc(g, in(g.acc).specialize(by_batch), in.update(g.acc).specialize(by_batch), g.batch, vec);
  schedule_gemv(g, by_gemv, vec, k, in);
  in(g.acc).vectorize(g.o, vec, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{g.o};
  for (const auto& r : g.r)
    order.push_back(r);
  in.update(g.acc).reorder(order).vectorize(g.o, vec, TailStrategy::GuardWithIf);
}

} // namespace halformer::schedules::cpu
