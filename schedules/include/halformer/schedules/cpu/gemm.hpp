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
inline constexpr int gemm_revision = 2; // 2: the matrix-vector branch for decode steps

inline std::vector<knob_decl> gemm_knobs() {
  return {
      {"vectors", {1, 2, 3, 4}, "output-feature vectors per register tile"},
      {"rows", {1, 2, 3, 4, 6, 8}, "rows per register tile (unrolled)"},
      {"tiles_per_task", {1, 2, 4, 8, 16, 32}, "column tiles per parallel task"},
      {"row_tiles_per_task", {1, 2, 4, 8, 16, 32}, "row tiles per parallel task (weight panel reuse)"},
      {"gemv_cols", {64, 128, 256, 512, 1024}, "decode GEMV: output features per task (heads: / 64)"},
      {"gemv_k", {8, 16, 32, 64, 128}, "decode GEMV: weight rows per reduction chunk"},
      {"gemv_vectors", {1, 2, 4, 8}, "decode GEMV: accumulator vectors per register tile"},
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

  // Decode steps with fewer rows than a register tile (t == 1, batch < rows): a
  // matrix-vector product, bound by streaming the weights. A task owns
  // `gemv_cols` output features (head projections: gemv_cols / 64 heads, whose
  // weights are contiguous) and walks the reduction in chunks of `gemv_k` weight
  // rows; per chunk, row and tile of `gemv_vectors` vectors the accumulators stay in
  // registers, so each chunk streams gemv_k contiguous spans of gemv_cols floats
  // (1 KiB at 256) and the task's accumulators (gemv_cols x batch) stay in L1.
  // The gemv_* knobs belong to this branch alone: the build takes them from the
  // best record at a decode shape, the others from the best prefill record
  // (export_knobs.cpp). Measured at decode rows = 1 (2 threads, AVX-512, weights
  // from memory): FFN 12.2 -> 15.0 GB/s, logits 12.8 -> 15.6 GB/s (~29 GB/s machine).
  const int cols = k["gemv_cols"], kchunk = k["gemv_k"];
  const Expr by_gemv = g.t_extent == 1 && g.batch_extent < rows;
  Var hi("hi");
  {
    Stage s = g.out.specialize(by_gemv);
    if (g.mid.empty())
      s.split(g.o, oo, oi, cols, TailStrategy::GuardWithIf)
          .reorder(oi, g.t, g.batch, oo)
          .vectorize(oi, vec)
          .parallel(oo);
    else // mid = {heads}: tasks over groups of heads ("oo", the accumulator's level)
      s.split(g.mid[0], oo, hi, std::max(1, cols / 64), TailStrategy::GuardWithIf)
          .reorder(g.o, g.t, hi, g.batch, oo)
          .vectorize(g.o, vec, TailStrategy::GuardWithIf)
          .parallel(oo);
  }
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
  {
    g.acc.specialize(by_gemv).vectorize(g.o, vec, TailStrategy::GuardWithIf);
    Stage u = g.acc.update().specialize(by_gemv);
    RVar ko("ko"), ki("ki");
    Var ot("ot"), ov("ov");
    u.split(g.o, ot, ov, vec * k["gemv_vectors"], TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> order{ov};
    if (g.r.size() == 1) { // chunks of gemv_k rows
      u.split(g.r[0], ko, ki, kchunk, TailStrategy::GuardWithIf);
      order.push_back(ki);
    } else { // out_projection: (d_k, heads); a head's d_k rows are the chunk
      order.push_back(g.r[0]);
    }
    order.push_back(ot);
    for (const Var& m : g.mid)
      order.push_back(m);
    order.push_back(g.t);
    order.push_back(g.batch);
    if (g.r.size() == 1)
      order.push_back(ko);
    else
      for (std::size_t i = 1; i < g.r.size(); ++i)
        order.push_back(g.r[i]);
    u.reorder(order).vectorize(ov, vec).unroll(ov);
  }
  g.acc.vectorize(g.o, vec, TailStrategy::GuardWithIf);
  {
    std::vector<VarOrRVar> order{g.o};
    for (const auto& r : g.r)
      order.push_back(r);
    g.acc.update().reorder(order).vectorize(g.o, vec, TailStrategy::GuardWithIf);
  }
}

} // namespace halformer::schedules::cpu
