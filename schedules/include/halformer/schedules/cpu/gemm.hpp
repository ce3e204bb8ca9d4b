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

#include "halformer/schedules/gemm_stages.hpp"
#include "halformer/schedules/knobs.hpp"

namespace halformer::schedules::cpu {

// Bumped whenever the schedule changes, so that database records measured with
// an older schedule are not reused (tuner/database.hpp).
inline constexpr int gemm_revision = 1;

inline std::vector<knob_decl> gemm_knobs() {
  return {
      {"vectors", {1, 2, 3, 4}, "output-feature vectors per register tile"},
      {"rows", {1, 2, 3, 4, 6, 8}, "rows per register tile (unrolled)"},
      {"tiles_per_task", {1, 2, 4, 8, 16, 32}, "column tiles per parallel task"},
      {"row_tiles_per_task", {1, 2, 4, 8, 16, 32}, "row tiles per parallel task (weight panel reuse)"},
  };
}

inline void schedule_gemm(gemm_stage g, const Halide::Target& target, const knob_values& k) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  const int tile_o = k["vectors"] * vec, rows = k["rows"], group = k["tiles_per_task"];
  const int row_group = k["row_tiles_per_task"];
  Var oc("oc"), oi("oi"), oo("oo"), og("og"), ro("ro"), ri("ri"), rr("rr"), rg("rg"), task("task");

  // Dims outside the register tile that join the parallel task loop. When tiling
  // over the batch (t == 1), t stays a serial loop of extent 1: fusing it would make
  // bounds inference divide by the task count and lose its exact bounds.
  auto fused_outer = [&](const Var& row) {
    std::vector<Var> dims = g.mid;
    if (row.name() != g.batch.name())
      dims.push_back(g.batch);
    return dims;
  };
  // One register-blocked branch tiling (o, row). A task owns `group` column tiles x
  // `row_group` row tiles; its loop over row tiles (rr) sits outside the loop over
  // column tiles (oo), so the task's weight panel (group x tile_o x K floats) is
  // reused from L2 by every row tile, and each row tile's inputs from L1 by every
  // column tile.
  auto blocked = [&](Stage s, const Var& row) {
    std::vector<VarOrRVar> order{oi, ri, oo, rr, og, rg};
    for (const Var& d : fused_outer(row))
      order.push_back(d);
    if (row.name() == g.batch.name())
      order.push_back(g.t);
    s.split(g.o, oc, oi, tile_o, TailStrategy::ShiftInwards)
        .split(oc, og, oo, group, TailStrategy::GuardWithIf)
        .split(row, ro, ri, rows, TailStrategy::ShiftInwards)
        .split(ro, rg, rr, row_group, TailStrategy::GuardWithIf)
        .reorder(order)
        .vectorize(oi, vec)
        .unroll(oi)
        .unroll(ri)
        .fuse(og, rg, task);
    for (const Var& d : fused_outer(row))
      s.fuse(task, d, task);
    s.parallel(task);
  };
  auto blocked_acc = [&](Stage pure, Stage update, const Var& row) {
    pure.vectorize(g.o, vec).unroll(g.o).unroll(row);
    std::vector<VarOrRVar> order{g.o, row};
    for (const auto& r : g.r)
      order.push_back(r);
    update.reorder(order).vectorize(g.o, vec).unroll(g.o).unroll(row);
  };

  Expr full_cols = g.o_extent >= tile_o;
  Expr by_t = full_cols && g.t_extent >= rows;
  Expr by_batch = full_cols && g.t_extent == 1 && g.batch_extent >= rows;

  blocked(g.out.specialize(by_t), g.t);
  blocked(g.out.specialize(by_batch), g.batch);
  // Fallback: one predicated vector per step, parallel over column groups and rows.
  {
    std::vector<VarOrRVar> order{oi, oo, og, g.t};
    for (auto& d : g.mid)
      order.push_back(d);
    order.push_back(g.batch);
    g.out.split(g.o, oc, oi, vec, TailStrategy::GuardWithIf)
        .split(oc, og, oo, group * k["vectors"], TailStrategy::GuardWithIf)
        .reorder(order)
        .vectorize(oi)
        .fuse(og, g.t, task);
    for (auto& d : g.mid)
      g.out.fuse(task, d, task);
    g.out.fuse(task, g.batch, task).parallel(task);
  }

  g.acc.compute_at(g.out, oo);
  blocked_acc(g.acc.specialize(by_t), g.acc.update().specialize(by_t), g.t);
  blocked_acc(g.acc.specialize(by_batch), g.acc.update().specialize(by_batch), g.batch);
  g.acc.vectorize(g.o, vec, TailStrategy::GuardWithIf);
  {
    std::vector<VarOrRVar> order{g.o};
    for (const auto& r : g.r)
      order.push_back(r);
    g.acc.update().reorder(order).vectorize(g.o, vec, TailStrategy::GuardWithIf);
  }
}

} // namespace halformer::schedules::cpu
