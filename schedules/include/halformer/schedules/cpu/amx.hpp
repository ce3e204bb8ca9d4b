// CPU schedule of a panel GEMM's AMX form (dsl/lower_amx.hpp), the first branch
// of cpu/panels.hpp's panel_gemm where the target has the tiles: one 16 x 16
// accumulator tile (16 outputs of a panel x 16 rows) per allocation, which is
// what Halide 21 holds in a tile register, the reduction in 64-byte steps.
// Loops, innermost first: the tile's epilogue (16 lanes x 16 rows), the row
// tiles of a block ("tile"; the sums are computed and stored to a 16 x 16
// buffer at "pi", a loop of one panel inside it), then tasks of one panel x a block of rows, in parallel, each panel
// copied once per task into the 3-D layout the tile loads need (in L1: 16 x
// the inputs' bytes). A block's inputs stay in L2 while its panels pass (32 row
// tiles of 2048 int8 inputs: 1 MiB), and a panel's copy serves 32 row tiles.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/gemm_stages.hpp"

#include <string>
#include <vector>

namespace halformer::schedules::cpu {

inline constexpr int amx_tile_rows = 16; // rows of an accumulator tile (AMX's most)
inline constexpr int amx_row_tiles_per_block = 32;

// The sums in their tile, stored to a 16 x 16 buffer (the wrapper) the epilogue
// reads, computed at the tile's loop "pi": the loop of that name in the other
// branches (cpu/panels.hpp) holds one panel's 16 outputs of one row, so the
// bounds below hold in every branch (Halide checks them there too, though it
// computes no AMX sums there) and the tile's extents are constants in each.
inline void amx_tile_sums(const dsl::lowering& ctx, const gemm_stage& g, const std::string& name) {
  using namespace Halide;
  const Var lane("lane"), panel("panel"), pi("pi");
  const RVar ko("ko"), ki("ki");
  Func sums = ctx.stage(name + "_amx"), stored = sums.in();
  const RDom k = ctx.rdom(name + "_amx");
  const int inputs_per_step = dsl::panels::amx_step_bytes / (sums.type().is_float() ? 2 : 1); // bf16 or int8
  // One panel a tile: the epilogue's last partial panel would leave its extent
  // to run time, and the tile's strides must be constants.
  for (Func f : {sums, stored})
    f.bound_extent(lane, dsl::panels::lanes).bound_extent(panel, 1);
  // The tile store needs a row stride other than the tile's width (Halide's
  // matcher takes a dense 16 x 16 store for one 256-wide vector): rows of 32.
  stored.compute_at(g.out, pi).align_storage(lane, 2 * dsl::panels::lanes).vectorize(lane).vectorize(g.t);
  sums.compute_at(g.out, pi).store_in(MemoryType::AMXTile).vectorize(lane).vectorize(g.t);
  std::vector<VarOrRVar> order{ki, lane, g.t, ko};
  for (const Var& v : sums.args())
    if (v.name() != lane.name() && v.name() != g.t.name())
      order.push_back(v);
  sums.update()
      .split(k.x, ko, ki, inputs_per_step)
      .reorder(order)
      .atomic()
      .vectorize(ki)
      .vectorize(lane)
      .vectorize(g.t);
}

// The AMX branch of `g` (stage `name`), taken where `condition` holds. A task
// is one panel of a block of rows: Halide computes a Func only at a loop every
// branch of its consumer has ("task", "tile", "pi"), so the panel's copy is
// made per task.
inline void amx_gemm(const dsl::lowering& ctx, const gemm_stage& g, const std::string& name,
                     const Halide::Expr& condition) {
  using namespace Halide;
  const Var op("op"), pi("pi"), ol("ol"), rt("rt"), ri("ri"), tile("tile"), block("block"), task("task");
  Func out = g.out;
  Stage s = out.specialize(condition);
  s.split(g.o, op, ol, dsl::panels::lanes, TailStrategy::GuardWithIf)
      .split(op, op, pi, 1)
      .split(g.t, rt, ri, amx_tile_rows, TailStrategy::ShiftInwards)
      .split(rt, block, tile, amx_row_tiles_per_block, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{ol, ri, pi, tile, op, block};
  order.insert(order.end(), g.mid.begin(), g.mid.end());
  order.push_back(g.batch);
  s.reorder(order).fuse(op, block, task);
  for (const Var& m : g.mid)
    s.fuse(task, m, task);
  s.fuse(task, g.batch, task).vectorize(ol).unroll(ri).parallel(task);
  const Var m("m"), lane("lane"), ml("ml");
  ctx.stage(name + "_amx_weights").compute_at(out, task).fuse(m, lane, ml).vectorize(ml);
  amx_tile_sums(ctx, g, name);
}

} // namespace halformer::schedules::cpu
