// CPU schedule of the GEMMs over weights in panels (dsl/panels.hpp,
// dsl::lowering::build_panel_contract): register tiles of `tile_panels` panels
// (16 outputs each) x `tile_rows` input rows (decode steps: `decode_tile_panels`
// x `decode_tile_rows`), each accumulator one panel's 16 sums of one row, which
// stay in their lanes over the whole reduction.
// One step of the reduction loads each panel's next 64-byte group once and
// broadcasts each row's next input (float32) or 4 input bytes (int8), then
// multiplies every pair:
// - floats: one FMA per (panel, row) and vector of the panel (2 ymm, 1 zmm);
//   AVX2 (16 ymm): 1 panel x 6 rows = 12 accumulators + 2 weights + 1
//   broadcast; AVX-512 (32 zmm): 2 panels x 8 rows = 16 + 2 + 1, or 4 x 6.
// - bfloat16 pairs: one vdpbf16ps (avx512_vnni, Halide's avx512_zen4) per
//   (panel, row), each lane's float32 sum taking two inputs' products a step,
//   broadcast as one 32-bit pair: the quads' register budget;
// - quads (avx512_vnni): one vpdpbusd per (panel, row), a zmm accumulator each;
//   AVX-512 (32 zmm): 2 panels x 8 rows = 16 accumulators + 2 weights + 1
//   broadcast. Zen 5, one thread, out projection (512 x 512) at batch 8, weights
//   in L2: 4.3 us against 13.7 for the dot-product layout's 2 x 4 tiles, whose
//   per-output vectors ended in lane sums and a scalar epilogue.
// - pairs (avx512, avx2, sse41): int16 products in pmaddwd pairs, two
//   accumulators per lane block (<name>_pairs: the pairs are added once per
//   tile), so a (panel, row) takes twice the quads' registers (four ymm on
//   AVX2), and the weights are widened to int16 once per step for all rows.
//   Where a tile's rows do not fit so, it sums the panel's lanes in passes
//   (panel_pass_lanes): AVX2 1 panel x 4 rows in passes of 8 lanes = 8
//   accumulators + 2 widened weights + 1 broadcast.
// The tile's rows shrink until its registers fit (accumulators + weights + one
// broadcast), so the knobs mean the same on every ISA. A decode step of one row
// takes the widest tile its registers allow instead (panel_widest_row_tile:
// AVX2 floats 4 panels x 1 row). The epilogue (dequantize,
// bias, activation, residual) runs on whole 16-lane vectors of outputs.
// The float32 sums of every tile shape add one output's products in the same
// order (the inputs in turn), so a row's result does not depend on its batch.
#pragma once

#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/amx.hpp"
#include "halformer/schedules/cpu/lanes.hpp"
#include "halformer/schedules/cpu/registers.hpp"
#include "halformer/schedules/gemm_stages.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace halformer::schedules::cpu {

// Prefill and decode steps have tiles of their own: a prefill tile re-reads
// each weight line for its rows from L2, a decode tile streams the weights from
// memory once for the whole batch, and a tile best at one was up to 10% slower
// at the other (Zen 4, ffn_relu at batch 8: the tuned prefill 4 x 4 tile 0.466
// ms, the 2 x 8 default 0.424).
inline std::vector<knob_decl> panel_knobs() {
  constexpr auto prefill = knob_phase::prefill, decode = knob_phase::decode;
  return {
      {"tile_panels", {1, 2, 4}, "prefill: panels of 16 outputs per register tile", false, prefill},
      {"tile_rows",
       {1, 2, 3, 4, 6, 8, 12},
       "prefill: token rows per register tile (fewer where the registers run out)",
       false,
       prefill},
      {"tiles_per_task",
       {1, 2, 4, 8, 16, 32, 64},
       "prefill: register tiles of outputs per parallel task",
       false,
       prefill},
      {"decode_tile_panels", {1, 2, 4}, "decode steps: panels of 16 outputs per register tile", false, decode},
      {"decode_tile_rows",
       {1, 2, 3, 4, 6, 8, 12},
       "decode steps: batch rows per register tile (fewer where the registers run out; one row takes the widest "
       "tile)",
       false,
       decode},
      {"tile_prefetch",
       {0, 1, 2, 4},
       "decode steps: at each reduction step, prefetch the output tile this many ahead (0: none)",
       false,
       decode},
      {"decode_task_kib",
       {16, 32, 64, 128, 256, 512, 1024, 2048},
       "decode steps: this many KiB of weights per parallel task, at most a core's share (heads joined)",
       false,
       decode},
  };
}

// How a panel GEMM sums (dsl::lowering::build_panel_contract): float32
// products, bfloat16 pairs (float32 sums of groups of two), int8 byte quads or
// int8 int16 pairs.
enum class panel_sums_kind { floats, bf16_pairs, quads, pairs };
inline panel_sums_kind panel_sums_of(const dsl::lowering& ctx, const std::string& name) {
  if (ctx.has_stage(name + "_pairs"))
    return panel_sums_kind::pairs;
  if (!ctx.stage(name + "_panels").type().is_float())
    return panel_sums_kind::quads;
  const Halide::Expr group = ctx.rdom(name)[0].extent(); // the reduction's members: a group's inputs
  return Halide::Internal::is_const(group, 1) ? panel_sums_kind::floats : panel_sums_kind::bf16_pairs;
}

// Vector registers one panel's 16 lanes of one row take: 32-bit sums, twice for pairs.
inline int panel_registers(const Halide::Target& target, panel_sums_kind kind) {
  const int per_panel = dsl::panels::lanes / target.natural_vector_size<int32_t>();
  return kind == panel_sums_kind::pairs ? 2 * per_panel : per_panel;
}

// Whether a tile whose (panel, row) sums take `v` registers each fits the
// registers: the sums, the weights (as many again per panel) and one broadcast.
inline bool tile_fits(int panels, int rows, int v, const Halide::Target& target) {
  return (rows + 1) * panels * v + 1 <= vector_registers(target);
}

// The narrowest pass of a pairs tile: one vector of int32 sums per (panel,
// row), half a vector of lanes (each lane's two pairs).
inline int narrowest_pass_lanes(const Halide::Target& target) { return target.natural_vector_size<int32_t>() / 2; }

// The tallest register tile the knobs allow: their rows, halved until the
// tile fits the registers. Pairs first narrow the tile's pass over the panel's
// lanes (panel_pass_lanes), so their rows are halved only where even the
// narrowest pass does not fit.
inline int panel_tallest_tile(int panels, int rows, const Halide::Target& target, panel_sums_kind kind) {
  const int v = kind == panel_sums_kind::pairs ? 1 : panel_registers(target, kind);
  while (rows > 1 && !tile_fits(panels, rows, v, target))
    rows = rows / 2;
  return rows;
}

// The panel lanes one pass of a tile's reduction sums. Floats and quads take
// the panel's 16 lanes at once. Pairs widen each step's weights to int16 in
// registers (vpmovsxbw) and use them for the tile's rows only: a tile of whole
// panels fits 2 rows on AVX2 (4 ymm of sums a row), and a batch of 8 widens
// every weight 4 times. A tile of a lane block instead keeps its rows and runs
// the reduction once per block (the panel's other blocks come from L1): 4 lanes
// take one ymm of sums a row, so 8 rows fit and each weight is widened once.
inline int panel_pass_lanes(int panels, int rows, const Halide::Target& target, panel_sums_kind kind) {
  int lanes = dsl::panels::lanes;
  if (kind != panel_sums_kind::pairs)
    return lanes;
  const int vec = target.natural_vector_size<int32_t>();
  while (lanes > narrowest_pass_lanes(target) && !tile_fits(panels, rows, 2 * lanes / vec, target))
    lanes /= 2;
  return lanes;
}

// The panels of a decode step's one-row tile: the most of the weights' panel
// group that fit the registers, at least the knobs' panels. One row shares no
// weights between rows, so it runs at the memory's speed if enough loads are in
// flight: a wider tile issues more per reduction step (Zen 4, 2 threads, harness
// medians of 7 interleaved rounds, 2 -> 4 panels: logits at batch 1 2.30 ->
// 2.03 ms, out projection 0.039 -> 0.034; at batch 8 the 2 x 8 tile stays
// faster, 0.054 against 0.064). Each weight vector feeds one product, so float,
// bfloat16 and quad weights are memory operands of their FMA, vdpbf16ps or
// vpdpbusd and take no register; pairs widen theirs into registers first.
inline int panel_widest_row_tile(int panels, const Halide::Target& target, panel_sums_kind kind) {
  const int v = panel_registers(target, kind), weights = kind == panel_sums_kind::pairs ? v : 0;
  for (int wide = dsl::panels::panel_group; wide > panels; wide /= 2)
    if (wide * (v + weights) + 1 <= vector_registers(target))
      return wide;
  return panels;
}

// The tile heights a schedule has branches for, tallest first: the tallest,
// then each of 8, 6, 4, 3, 2 and 1 below it. Each is a branch taken where the
// call's rows (the batch in a decode step, t in prefill) suit it
// (tile_height_suits).
inline std::vector<int> panel_tile_heights(int tallest) {
  std::vector<int> heights{tallest};
  for (int rows : {8, 6, 4, 3, 2, 1})
    if (rows < tallest)
      heights.push_back(rows);
  return heights;
}

// Whether `rows` rows take tiles of `height`, the branches tried tallest first.
// The last tile is shifted inwards, so a height that does not divide the rows
// computes some twice: a height suits where it recomputes at most an eighth of
// the rows (one row below 16): a batch of 8 takes two tiles of 4, 7 two of 4,
// 5 two of 3, 32 six of 6. Taller tiles keep more FMAs in flight and re-read
// each weight line for fewer rows (Zen 3, 2 threads, ffn_relu, harness medians
// of 7 interleaved rounds, 1 x 4 tiles -> 1 x 6: batch 32 1.50 -> 1.29 ms,
// prefill 24 x 8 rows 6.6 -> 6.0; with 6 at batch 8 too, 12 rows computed,
// 0.65 -> 0.68).
inline Halide::Expr tile_height_suits(const Halide::Expr& rows, int height) {
  const Halide::Expr recomputed = (rows + height - 1) / height * height - rows;
  return rows >= height && recomputed * 8 <= Halide::max(rows, 8);
}

// The bytes of one output's weights: the reduction's extent (its groups).
inline Halide::Expr panel_output_bytes(const Halide::RDom& r) {
  Halide::Expr bytes = dsl::panels::group_bytes * r[1].extent();
  for (int i = 2; i < r.dimensions(); ++i)
    bytes *= r[i].extent();
  return bytes;
}

// The weights one decode task streams: `decode_task_kib`, but at most a core's
// share of the GEMM's weights, so that every core has a task (the host's cores,
// from Halide's runtime when the loop starts). Large tasks stream best: a task
// starts a new stream, and its last tile's prefetch (prefetch_next_tiles) lands
// in the next task, which another thread runs; tasks of 128 KiB are two float32
// tiles of 2 x 8 at d_model 512 (Zen 5, 2 threads, batch 8, harness medians of
// 5 interleaved rounds, 128 KiB -> 512: qkv projection 0.0695 -> 0.0553 ms, out
// projection 0.0239 -> 0.0192, logits 1.59 -> 1.31; 1024, leaving one of the
// two cores idle for the 1 MiB projections: 0.0728, 0.0289). Head projections
// join whole heads by the knob alone (panel_output): sized from the extents,
// their heads' split failed the output's bounds check (Halide 21).
inline Halide::Expr decode_task_bytes(const gemm_stage& g, const Halide::RDom& r, const knob_values& k) {
  using namespace Halide;
  const Expr weights = g.o_extent * panel_output_bytes(r); // one GEMM of weights; head projections never come here
  return clamp(weights / host_cores(), 1, k["decode_task_kib"] * 1024);
}

// The loop over a blocked GEMM's row blocks (gemm_stage::block).
inline Halide::Var row_block() { return Halide::Var("row_block"); }

struct panel_tile {
  int panels, rows;
  bool decode;
  int pass_lanes = dsl::panels::lanes; // the lanes one pass of the reduction sums (panel_pass_lanes)
};

// The output's loops for one tile branch: o split into panels (op) of 16 lanes
// (ol, the last partial panel guarded) and the panels into tiles (pi inside);
// rows (the batch in a decode step, t in prefill) into tiles of `rows` (ri),
// shifted inwards. The loop directly outside the register tile is "tile" in
// every branch: the sums are computed there. Where `g.block` is defined, t is
// first split into serial blocks of that many rows ("row_block", outermost,
// the last shifted inwards), which the schedule computes the GEMM's inputs at.
// Decode steps: every row tile inside each output tile (a tile's weights are
// read once, from memory, and serve the batch from L1), tasks of
// decode_task_bytes, whole heads where a head holds less. Prefill:
// the row tiles outside, a task's `tiles_per_task` output tiles read from
// memory once, then from L2 by each row tile.
inline void panel_output(const gemm_stage& g, Halide::Stage s, const panel_tile& p, const Halide::RDom& r,
                         const knob_values& k) {
  using namespace Halide;
  Var op("op"), ol("ol"), pi("pi"), pt("pt"), rt("rt"), tile("tile"), ri("ri"), task("task"), hg("hg"), hi("hi");
  Var t = g.t;
  std::vector<VarOrRVar> outer; // the row blocks, outermost
  if (g.block.defined()) {
    t = Var("block_t");
    outer.push_back(row_block());
    s.split(g.t, row_block(), t, g.block, TailStrategy::ShiftInwards);
  }
  const Var rows = p.decode ? g.batch : t;
  s.split(g.o, op, ol, dsl::panels::lanes, TailStrategy::GuardWithIf);
  if (!p.decode) {
    s.split(op, tile, pi, p.panels, TailStrategy::GuardWithIf)
        .split(rows, rt, ri, p.rows, TailStrategy::ShiftInwards)
        .split(tile, task, tile, k["tiles_per_task"], TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> order{ol, pi, ri, tile, rt, task};
    order.insert(order.end(), g.mid.begin(), g.mid.end());
    order.push_back(g.batch);
    order.insert(order.end(), outer.begin(), outer.end());
    s.reorder(order);
    for (const Var& m : g.mid)
      s.fuse(task, m, task);
    s.fuse(task, g.batch, task);
  } else {
    const Expr want = g.mid.empty() ? decode_task_bytes(g, r, k) : Expr(k["decode_task_kib"] * 1024),
               tile_bytes = p.panels * dsl::panels::lanes * panel_output_bytes(r);
    s.split(op, pt, pi, p.panels, TailStrategy::GuardWithIf)
        .split(rows, tile, ri, p.rows, TailStrategy::ShiftInwards)
        .split(pt, task, pt, max(1, (want + tile_bytes - 1) / tile_bytes), TailStrategy::GuardWithIf);
    if (g.mid.empty()) {
      std::vector<VarOrRVar> order{ol, pi, ri, tile, pt, task, t};
      order.insert(order.end(), outer.begin(), outer.end());
      s.reorder(order).fuse(task, t, task);
    } else { // heads: groups of whole heads of at most a task's bytes
      const Expr heads = max(1, want / max(1, g.o_extent * panel_output_bytes(r)));
      s.split(g.mid[0], hg, hi, heads, TailStrategy::GuardWithIf)
          .reorder(ol, pi, ri, tile, pt, hi, task, hg, g.t)
          .fuse(task, hg, task)
          .fuse(task, g.t, task);
    }
  }
  s.vectorize(ol).unroll(pi).unroll(ri).parallel(task);
}

// Decode steps: at each step of the reduction, prefetch the same step's group of
// the output tile `tiles` ahead, one line per panel. A tile's panels lie one
// after another (dsl/panels.hpp), so that group is `tiles` x `panels` panels of
// reduction steps further on: an offset of the reduction's own loop, left
// unclamped (a prefetch does not fault; past a task's end it fetches the next
// task's weights). Why not the next tile's weights at once at the tile's start,
// or a few steps ahead within the tile: a tile's dependent vpdpbusd fill the
// scheduler, so only a few steps' loads are in flight and the hardware
// prefetchers lag; steady prefetches one tile ahead keep the memory busy while
// the tile computes (Zen 5, one thread, 128 KiB of panels from memory, 2 x 8
// tiles: 13.5 us without, 8-9.6 with 16-64 steps ahead, 6.5 one tile ahead).
inline void prefetch_next_tiles(Halide::Stage reduction, const gemm_stage& g, const panel_tile& p,
                                const Halide::RDom& r, int tiles) {
  if (tiles == 0 || !p.decode || p.rows == 1 || !g.weights.defined())
    return; // one row: its loop is short, so many steps' loads are in flight anyway (the prefetch cost 5-15%)
  Halide::Expr steps_per_panel = r[1].extent(); // a panel's groups: 64 bytes each
  for (int i = 2; i < r.dimensions(); ++i)
    steps_per_panel *= r[i].extent();
  reduction.prefetch(g.weights, r[1], r[1], tiles * p.panels * steps_per_panel,
                     Halide::PrefetchBoundStrategy::NonFaulting);
}

// The sums of one tile: lanes across the vector, the tile's panels and rows
// unrolled around each step of the reduction (member, group, other inputs);
// `name` and `r`: the GEMM's stage and reduction, which panel_gemm looked up.
// The tile's panels are the branch's: the sums' panels split by them, rounded
// up (a constant, for the unrolled tile; the split's outer loop outermost, once
// per tile), which the weights' padding to whole panel groups keeps in bounds
// where the output's last tile is partial.
inline void panel_sums(const dsl::lowering& ctx, const gemm_stage& g, const std::string& name, const Halide::RDom& r,
                       const panel_tile& p, const Halide::Expr& condition, panel_sums_kind kind, int prefetch_tiles) {
  using namespace Halide;
  const Var lane("lane"), panel("panel"), pair("pair"), tiles("tiles"), rows = p.decode ? g.batch : g.t;
  Func sums = ctx.stage(name + "_panels");
  std::vector<VarOrRVar> order{r[0]};
  if (kind == panel_sums_kind::pairs)
    order.push_back(pair);
  order.insert(order.end(), {lane, panel, rows});
  for (int i = 1; i < r.dimensions(); ++i)
    order.push_back(r[i]);
  order.push_back(tiles);
  const auto tile_of = [&](Stage st) { return st.split(panel, tiles, panel, p.panels, TailStrategy::RoundUp); };
  const auto pure_tile = [&](Stage pure) {
    return tile_of(pure).reorder(lane, panel, rows, tiles).vectorize(lane).unroll(panel).unroll(rows);
  };
  const auto tile = [&](Stage pure, Stage update) {
    pure_tile(pure);
    tile_of(update);
    std::vector<VarOrRVar> passes = order;
    if (p.pass_lanes < dsl::panels::lanes) { // the tile's lane blocks in turn, each over the whole reduction
      const Var pass("pass");
      update.split(lane, pass, lane, p.pass_lanes, TailStrategy::RoundUp);
      passes.insert(passes.end() - 1, pass);
    }
    update.reorder(passes);
    if (kind != panel_sums_kind::floats) // a float group is one input; others sum their products per lane
      update.atomic().vectorize(r[0]);
    update.vectorize(lane).unroll(panel).unroll(rows);
    if (kind == panel_sums_kind::pairs)
      update.vectorize(pair);
    prefetch_next_tiles(update, g, p, r, prefetch_tiles);
  };
  // `condition` undefined: the general branch, outside every specialization.
  const auto in = [&](Stage st) { return condition.defined() ? st.specialize(condition) : st; };
  if (kind != panel_sums_kind::pairs) {
    tile(in(sums), in(sums.update()));
    return;
  }
  Func pairs = ctx.stage(name + "_pairs");
  pure_tile(in(sums));
  Stage pure = in(pairs);
  pure.vectorize(pair);
  tile(pure, in(pairs.update()));
}

// The GEMM `g` over panels: a branch per register tile, decode steps and
// prefill apart, the general one (one row) last.
inline void panel_gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                       const bucket_scope& in) {
  using namespace Halide;
  if (in.conditioned())
    throw std::invalid_argument("the panel GEMM schedule takes one knob set: no shape buckets");
  const std::string name = ctx.stage_name(g.acc);
  const panel_sums_kind kind = panel_sums_of(ctx, name);
  const RDom r = ctx.rdom(name);
  const Expr decode = g.t_extent == 1;
  const int panels = k["tile_panels"], decode_panels = k["decode_tile_panels"];
  for (int p : {panels, decode_panels})
    if (dsl::panels::panel_group % p != 0)
      throw std::invalid_argument("tile_panels and decode_tile_panels must divide the weights' panel group");
  Func sums = ctx.stage(name + "_panels");
  if (const Expr amx = ctx.amx_condition(name); amx.defined()) // first: the tiles where they apply (cpu/amx.hpp)
    amx_gemm(ctx, g, name, amx);
  std::vector<std::pair<panel_tile, Expr>> branches;
  const auto tile = [&](int tile_panels, int rows, bool in_decode) {
    return panel_tile{tile_panels, rows, in_decode, panel_pass_lanes(tile_panels, rows, target, kind)};
  };
  const int tallest_decode = panel_tallest_tile(decode_panels, k["decode_tile_rows"], target, kind);
  for (int rows : panel_tile_heights(tallest_decode))
    if (rows > 1)
      branches.push_back({tile(decode_panels, rows, true), decode && tile_height_suits(g.batch_extent, rows)});
  branches.push_back({{panel_widest_row_tile(decode_panels, target, kind), 1, true}, decode});
  for (int rows : panel_tile_heights(panel_tallest_tile(panels, k["tile_rows"], target, kind)))
    if (rows > 1) // one row: the general branch
      branches.push_back({tile(panels, rows, false), !decode && tile_height_suits(g.t_extent, rows)});
  for (const auto& [p, condition] : branches)
    panel_output(g, g.out.specialize(condition), p, r, k);
  panel_output(g, g.out, {panels, 1, false}, r, k);
  // Storage for the widest tile: constant strides, so the accumulators stay in registers.
  sums.compute_at(g.out, Var("tile"))
      .bound_extent(Var("lane"), dsl::panels::lanes)
      .bound_storage(Var("panel"), dsl::panels::panel_group);
  if (kind == panel_sums_kind::pairs)
    ctx.stage(name + "_pairs").compute_at(g.out, Var("tile")).bound_storage(Var("panel"), dsl::panels::panel_group);
  for (const auto& [p, condition] : branches)
    panel_sums(ctx, g, name, r, p, condition, kind, k["tile_prefetch"]);
  panel_sums(ctx, g, name, r, {panels, 1, false}, Expr(), kind, 0);
}

} // namespace halformer::schedules::cpu
