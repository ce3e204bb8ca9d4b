// The GPU output tiling every GEMM-shaped stage uses (projections, FFN, logits), after
// Halide's apps/cuda_mat_mul: one thread block computes a (threads_o x regs_o) x
// (threads_rows x regs_rows) output tile; each thread owns a regs_o x regs_rows
// register tile of accumulators for the whole reduction, so every weight and
// input value it loads feeds regs_rows (resp. regs_o) FMAs.
//
// Coalescing: weights lie in panels (dsl/panels.hpp), 16 outputs' values side by
// side in each 64-byte line, so neighbouring threads along o read neighbouring
// weights (gpu/quantized.hpp: schedule_panel_gemm); an input value is the same
// for every thread of a row (a broadcast from L1/the read-only cache).
//
// Register budget (defaults 4 x 4 = 16 accumulators + 4 weights + 4 inputs per
// thread): well below the 64 registers that keep a 256-thread block at full
// occupancy on sm_70..sm_90. Decode steps (t == 1) tile over the batch instead.
// Tails are guarded (GuardWithIf): on a GPU a guarded thread simply idles.
#pragma once

#include "halformer/schedules/gemm_stages.hpp"
#include "halformer/schedules/knobs.hpp"

namespace halformer::schedules::gpu {

inline std::vector<knob_decl> gemm_knobs() {
  return {
      {"threads_o", {8, 16, 32, 64}, "threads per block along the output feature"},
      {"threads_rows", {1, 2, 4, 8, 16}, "threads per block along the rows"},
      {"regs_o", {1, 2, 4, 8}, "output features per thread (register tile)"},
      {"regs_rows", {1, 2, 4, 8}, "rows per thread (register tile)"},
      {"k_unroll", {1, 2, 4, 8}, "reduction steps unrolled per loop iteration"},
  };
}

// One branch of the output: block tile over (o, row), thread tile inside,
// registers innermost; the thread loop along o is "ot".
inline void tile_gemm_output(const gemm_stage& g, Halide::Stage s, const Halide::Var& row, const knob_values& k) {
  using namespace Halide;
  const int regs_o = k["regs_o"], regs_rows = k["regs_rows"];
  const int tile_o = k["threads_o"] * regs_o, tile_rows = k["threads_rows"] * regs_rows;
  Var ob("ob"), rb("rb"), oi("oi"), ri("ri"), ot("ot"), rt("rt"), oreg("oreg"), rreg("rreg"), blk("blk");
  s.tile(g.o, row, ob, rb, oi, ri, tile_o, tile_rows, TailStrategy::GuardWithIf)
      .tile(oi, ri, ot, rt, oreg, rreg, regs_o, regs_rows, TailStrategy::GuardWithIf)
      .reorder(oreg, rreg, ot, rt, ob, rb);
  // Every dimension outside the tile becomes the third block dimension.
  std::vector<Var> outer = g.mid;
  outer.push_back(row.name() == g.batch.name() ? g.t : g.batch);
  Var fused = outer[0];
  for (std::size_t i = 1; i < outer.size(); ++i)
    s.fuse(fused, outer[i], blk), fused = blk;
  s.unroll(oreg).unroll(rreg).gpu_blocks(ob, rb, fused).gpu_threads(ot, rt);
}

} // namespace halformer::schedules::gpu
