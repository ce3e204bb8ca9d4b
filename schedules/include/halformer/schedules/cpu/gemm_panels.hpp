// The prefill GEMM's main branch, for gemm.hpp: tasks of whole register-tile
// panels with the reduction cut into L1-sized chunks.
#pragma once

#include "halformer/schedules/gemm_stages.hpp"

namespace halformer::schedules::cpu {

// A register tile (`vectors` vectors x `rows` rows, gemm.hpp's budget) that
// walked the whole reduction would read its weight panel (K x tile floats, 48
// KiB at K = 512 on AVX2) from L2 for every row tile, one short piece of each
// weight row per step: a Zen 2 then stalls on L2 at ~52% of its FMA peak. So a
// task owns `tiles_per_task` column tiles x `row_tiles_per_task` row tiles and
// cuts the reduction into chunks of `k_chunk` weight rows: per chunk and column
// tile, the weights (k_chunk x tile floats: 6 KiB at 64 rows on AVX2, 12 on
// AVX-512) are read once into L1 and reused by every row tile of the task, whose
// accumulators wait in the task's block (its width and height are compile-time
// constants, so the compiler keeps a tile's accumulators in registers within a
// chunk). The tasks cover the output exactly (the last ones shifted inwards);
// each output still sums the reduction in order. The panel's rows are the
// tokens (prefill) or, in a decode step of a large batch (t == 1), the batch rows,
// which lie one d_model apart just as tokens do: there the panels beat the
// decode tiles, which keep their accumulators in L2 between short weight chunks
// (Zen 2, logits at 32 rows: see schedules/knobs/x86-64.json).
struct panel_stages {
  Halide::Stage out, acc, update;
};

// The register tiles of a panel task: per chunk of `k_chunk` weight rows and
// column tile, every row tile of the task (and each head of it in turn).
inline void schedule_panel_tiles(const gemm_stage& g, Halide::Stage acc, Halide::Stage update, const Halide::Var& rows,
                                 const Halide::Var& group, int vec, const knob_values& k) {
  using namespace Halide;
  Var ot("ot"), ov("ov"), tt("tt"), tv("tv");
  RVar ko("ko"), ki("ki");
  acc.vectorize(g.o, vec);
  update.split(g.o, ot, ov, k["vectors"] * vec, TailStrategy::GuardWithIf)
      .split(rows, tt, tv, k["rows"], TailStrategy::GuardWithIf)
      .split(g.r[0], ko, ki, k["k_chunk"], TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{ov, tv, ki, tt, group, ot};
  order.insert(order.end(), g.mid.begin(), g.mid.end());
  order.push_back(ko);
  order.insert(order.end(), g.r.begin() + 1, g.r.end());
  update.reorder(order).vectorize(ov, vec).unroll(ov).unroll(tv);
}

// `rows` is the panel's row dim (g.t, or g.batch in a decode step) and `group`
// the other one. A task's rows are an even share of `rows` of at most one panel
// (rows x row_tiles_per_task rows), or all of them when there are fewer, times as
// many of `group` as it takes to fill the panel (both factors are the call's): a
// batch of short sentences fills its tasks with whole sentences, where panels
// over t alone left it to the blocked branch (Zen 2, 2 threads, Transformer-base
// ffn at t = 41: 32 sentences 50.3 -> 42.3 ms, one sentence 2.20 -> 1.70 ms).
// Even shares keep the last task, shifted inwards, from redoing most of a panel
// (t = 200 with 128-row panels: two tasks of 100 rows, not 128 and 128). A task's
// columns are `tiles_per_task` register tiles, or one head of a head projection.
inline void schedule_panels(const gemm_stage& g, panel_stages s, const Halide::Var& rows,
                            const Halide::Expr& rows_extent, const Halide::Var& group, const Halide::Expr& group_extent,
                            int vec, const knob_values& k) {
  using namespace Halide;
  Var oc("oc"), oi("oi"), tr("tr"), ti("ti"), gr("gr"), gi("gi"), oo("oo");
  const int tile = k["vectors"] * vec, cols = tile * k["tiles_per_task"], panel = k["rows"] * k["row_tiles_per_task"];
  const Expr shares = (rows_extent + panel - 1) / panel;
  const Expr rows_per_task = (rows_extent + shares - 1) / shares;
  const Expr group_per_task = clamp(panel / rows_per_task, 1, group_extent);
  s.out.split(rows, tr, ti, rows_per_task, TailStrategy::ShiftInwards)
      .split(group, gr, gi, group_per_task, TailStrategy::ShiftInwards);
  if (g.mid.empty()) {
    s.out.split(g.o, oc, oi, cols, TailStrategy::ShiftInwards).reorder(oi, ti, gi, oc, tr, gr).vectorize(oi, vec);
  } else { // heads: a task owns one head (cols == d_k)
    s.out.reorder(g.o, ti, gi, g.mid[0], tr, gr).vectorize(g.o, vec).rename(g.mid[0], oc);
  }
  s.out.fuse(oc, tr, oo).fuse(oo, gr, oo).parallel(oo);
  schedule_panel_tiles(g, s.acc, s.update, rows, group, vec, k);
}

// Whether a call takes the panels, by its output's width: one task wide (decode)
// or four (prefill: narrower outputs would repeat up to half a task's columns,
// the last task shifted inwards); heads exactly one task wide, so that d_k (the
// call's) is a constant in the branch: a task's accumulators then lie a constant
// apart, which lets the compiler keep a tile of them in registers (with d_k a
// variable they were loaded and stored every step: qkv at 128 rows 1.63 -> 3.46
// ms on a Zen 2).
inline Halide::Expr panel_columns_fit(const gemm_stage& g, int tasks, int vec, const knob_values& k) {
  const int cols = k["vectors"] * vec * k["tiles_per_task"];
  if (!g.mid.empty())
    return g.o_extent == cols;
  return g.o_extent >= tasks * cols;
}

} // namespace halformer::schedules::cpu
