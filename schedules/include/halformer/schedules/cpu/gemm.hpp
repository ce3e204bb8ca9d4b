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
// Decode steps (t == 1) stream the weights instead (schedule_decode_acc below);
// prefill shapes that cannot fill one register tile (features < vectors x lanes,
// or fewer rows than `rows`) take a predicated fallback.
#pragma once

#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/gemm_decode.hpp"
#include "halformer/schedules/cpu/gemm_panels.hpp"
#include "halformer/schedules/gemm_stages.hpp"

#include <numeric>

namespace halformer::schedules::cpu {

// 1, 2, ..., n: a knob whose value follows the machine (e.g. its core count).
inline std::vector<int> one_to(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 1);
  return v;
}

inline std::vector<knob_decl> gemm_knobs() {
  return {
      {"vectors", {1, 2, 3, 4}, "output-feature vectors per register tile"},
      {"rows", {1, 2, 3, 4, 6, 8}, "rows per register tile (unrolled)"},
      {"tiles_per_task", {1, 2, 4, 8, 16, 32}, "column tiles per parallel task"},
      {"row_tiles_per_task", {1, 2, 4, 8, 16, 32}, "row tiles per parallel task (weight panel reuse)"},
      {"gemv_cols",
       {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384},
       "decode: at most this many features per task (heads: gemv_cols / d_k heads)"},
      {"k_chunk", {32, 64, 128, 256, 512}, "prefill: weight rows per reduction chunk (panels)"},
      {"gemv_k", {2, 4, 8, 16, 32, 64, 128}, "decode: weight rows per chunk, streamed side by side"},
      {"gemv_vectors", {1, 2, 3, 4, 8}, "decode: accumulator vectors per register tile"},
      {"gemv_min_tasks", one_to(64), "decode: at least this many tasks where the width allows"},
      {"gemv_rows",
       {1, 2, 3, 4, 6, 8},
       "decode: batch rows per register tile from this many rows on (1: one-row tiles)"},
      {"gemv_acc_kib",
       {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096},
       "decode: at most this many KiB of accumulators per multi-row task"},
      {"gemv_k_most",
       {8, 16, 32, 64, 128},
       "decode: at most this many weight rows per multi-row tile's chunk, however large the batch"},
  };
}

namespace detail {
// One register-blocked branch tiling (o, t) for prefill. A task owns
// `tiles_per_task` column tiles x `row_tiles_per_task` row tiles; its loop over row
// tiles (rr) sits outside the loop over column tiles (oo), so the task's weight
// panel (group x tile_o x K floats) is reused from L2 by every row tile, and each
// row tile's inputs from L1 by every column tile. The dims outside the tile (heads,
// batch) join the parallel task loop.
inline void schedule_blocked(const gemm_stage& g, Halide::Stage s, int vec, const knob_values& k) {
  using namespace Halide;
  Var oc("oc"), oi("oi"), oo("oo"), og("og"), ro("ro"), ri("ri"), rr("rr"), rg("rg"), task("task");
  std::vector<VarOrRVar> order{oi, ri, oo, rr, og, rg};
  std::vector<Var> outer = g.mid;
  outer.push_back(g.batch);
  order.insert(order.end(), outer.begin(), outer.end());
  s.split(g.o, oc, oi, k["vectors"] * vec, TailStrategy::ShiftInwards)
      .split(oc, og, oo, k["tiles_per_task"], TailStrategy::GuardWithIf)
      .split(g.t, ro, ri, k["rows"], TailStrategy::ShiftInwards)
      .split(ro, rg, rr, k["row_tiles_per_task"], TailStrategy::GuardWithIf)
      .reorder(order)
      .vectorize(oi, vec)
      .unroll(oi)
      .unroll(ri)
      .fuse(og, rg, task);
  for (const Var& d : outer)
    s.fuse(task, d, task);
  s.parallel(task);
}
inline void schedule_blocked_acc(const gemm_stage& g, Halide::Stage pure, Halide::Stage update, int vec) {
  pure.vectorize(g.o, vec).unroll(g.o).unroll(g.t);
  std::vector<Halide::VarOrRVar> order{g.o, g.t};
  for (const auto& r : g.r)
    order.push_back(r);
  update.reorder(order).vectorize(g.o, vec).unroll(g.o).unroll(g.t);
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

// The GEMM's branches by shape: panels over the tokens and sentences (prefill of
// two register tiles' rows or more) or the batch rows (decode steps of a panel's
// rows or more; gemm_panels.hpp), blocked over t (shorter prefill, and heads),
// the decode step (t == 1, gemm_decode.hpp), else the fallback; the accumulator
// is computed per output task ("oo") in each.
inline void schedule_gemm(gemm_stage g, const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  // t > 1: a decode step takes the decode branch even when `rows` is 1 (the
  // branches are then disjoint, and Halide drops the infeasible ones).
  const Expr by_t = g.o_extent >= k["vectors"] * vec && g.t_extent >= k["rows"] && g.t_extent > 1;
  const Expr decode = g.t_extent == 1;

  const auto panels = [&](const Expr& cond, const Var& rows, const Expr& rows_extent, const Var& group,
                          const Expr& group_extent) {
    schedule_panels(g, {in(g.out).specialize(cond), in(g.acc).specialize(cond), in.update(g.acc).specialize(cond)},
                    rows, rows_extent, group, group_extent, vec, k);
  };
  // Prefill panels from two register tiles' rows on, over reductions of four
  // chunks or more: shorter ones gain nothing over the blocked branch (Zen 2, ffn
  // of d_model 128, d_ff 512 at t = 24 x 32 sentences: 1.31 ms blocked, 1.75 in
  // panels).
  const int panel = k["rows"] * k["row_tiles_per_task"];
  panels(panel_columns_fit(g, 4, vec, k) && g.t_extent > 1 && g.t_extent >= 2 * k["rows"] &&
             g.r[0].extent() >= 4 * k["k_chunk"],
         g.t, g.t_extent, g.batch, g.batch_extent);
  panels(panel_columns_fit(g, 1, vec, k) && decode && g.batch_extent >= panel, g.batch, g.batch_extent, g.t,
         g.t_extent); // a large batch's decode step
  detail::schedule_blocked(g, in(g.out).specialize(by_t), vec, k);
  const decode_stages d{in(g.out).specialize(decode), in(g.acc).specialize(decode),
                        in.update(g.acc).specialize(decode)};
  schedule_decode(g, d, vec, k);
  detail::schedule_fallback(g, in(g.out), vec, k);

  g.acc.compute_at(g.out, Var("oo"));
  detail::schedule_blocked_acc(g, in(g.acc).specialize(by_t), in.update(g.acc).specialize(by_t), vec);
  in(g.acc).vectorize(g.o, vec, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{g.o};
  for (const auto& r : g.r)
    order.push_back(r);
  in.update(g.acc).reorder(order).vectorize(g.o, vec, TailStrategy::GuardWithIf);
}

} // namespace halformer::schedules::cpu
