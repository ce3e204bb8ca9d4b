// CPU schedules of the int8 and bfloat16 GEMM kernels (dsl::quantized_linear,
// dsl::bf16_linear): the input's per-row quantization (or rounding to bfloat16),
// then register tiles over the weights: int8 weights in panels (cpu/panels.hpp),
// bfloat16 weights in the dot-product layout (below).
//
// bfloat16 weights lie in the dot-product layout (dsl/expr.hpp: a weight row is
// one output's inputs), so one step of a tile reads 2 x `vec` consecutive inputs
// of `dot_outputs` weight rows and of `dot_rows` input rows and sums each pair of
// products (vdpbf16ps with avx512_vnni, Halide's avx512_zen4) into `vec` float32
// partial sums per (output, row), which stay in registers for the whole
// reduction and are summed across lanes once at the end. Register budget: AVX2
// (16 ymm) 2 outputs x 4 rows = 8 partial sums + 2 weight vectors + 4 inputs =
// 14; AVX-512 (32 zmm) the same tile, or 4 x 4 = 16 + 4 + 4 = 24. Batch 1
// streams the weights, larger batches reuse each weight vector `dot_rows` times.
// Why the int8 kernels' int16 pairs use pmaddwd and not AVX2's pmaddubsw (u8 x
// s8, 32 products per instruction): besides its int16 saturation (2 x 255 x
// 127), on Zen 3 the two share the same two multiply pipes (measured: 2 of
// either per cycle, 1 pair per cycle), and pmaddubsw's int16 sums need a pmaddwd
// by ones to reach int32, so it gives no more products per cycle; either way
// int8 peaks at twice float32's FMA rate.
#pragma once

#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"
#include "halformer/schedules/cpu/panels.hpp"
#include "halformer/schedules/gemm_stages.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> bf16_gemm_knobs() {
  return {
      {"dot_outputs", {1, 2, 3, 4, 6, 8}, "outputs per register tile (weight rows read per step)"},
      {"dot_rows", {1, 2, 3, 4}, "input rows per register tile"},
      {"tiles_per_task", {1, 2, 4, 8, 16, 32, 64, 128}, "register tiles of outputs per parallel task"},
      {"tile_prefetch",
       {0, 2, 4, 8},
       "decode steps: prefetch the weights of the output tile this many ahead (0: none)",
       false,
       knob_phase::decode},
      {"decode_task_kib",
       {16, 32, 64, 128, 256, 512},
       "decode steps: at least this many KiB of weights per parallel task (heads joined)",
       false,
       knob_phase::decode},
  };
}

// The int8 inputs' row tasks: 16 rows (a row takes well under a microsecond at
// d_model 512; 16 amortise the thread pool's ~1 us dispatch).
constexpr int input_rows_per_task = 16;

// A reduction per row over its features (`f`'s update over `r`, r.x innermost)
// at root in row tasks, in lanes (reduction_in_lanes; the max and the integer
// sum of the int8 inputs are exact in any order). A row's scalar sum atomically
// vectorized stayed scalar (15% of ffn_int8 at 32 x 128 rows). The lanes' final
// sum is a plain loop: its extent is min(vec, features), not a constant, so
// atomic().vectorize() made it a compare-and-swap per lane (half of the step
// max; out_projection_int8 at batch 8 with its inputs in L2: 5.1 -> 4.3 us).
inline void row_reduction_in_lanes(Halide::Func f, const Halide::RDom& r, int vec) {
  Halide::Func lanes = reduction_in_lanes(f, r, vec, 1);
  f.compute_root();
  in_row_tasks(f, input_rows_per_task);
  in_row_tasks(f.update(), input_rows_per_task);
  lanes.compute_at(f, row_in_task());
}

// An input's rows at root, before the GEMM reads them: its features innermost,
// in row tasks, vectorised along dim 0, the loop over vectors always partitioned
// (a task of fewer than 16 rows kept its guard inside otherwise, cpu/lanes.hpp).
// Rows are (t, batch); the out projection's features are (d_k, heads).
inline void rows_at_root(Halide::Func values, const Halide::Target& target) {
  using namespace Halide;
  std::vector<VarOrRVar> order; // the features innermost, in their order, then t and batch
  for (const Var& v : values.args())
    if (v.name() != "t" && v.name() != "batch")
      order.push_back(v);
  order.insert(order.end(), {Var("t"), Var("batch")});
  values.compute_root().reorder(order);
  Var fo("fo"), fi("fi");
  in_row_tasks(values, input_rows_per_task)
      .split(values.args()[0], fo, fi, target.natural_vector_size<float>(), TailStrategy::GuardWithIf)
      .vectorize(fi)
      .always_partition(fo);
}

// The inputs of the int8 GEMMs: quantized (dsl::quantize_rows: stages <name>,
// <name>_step and <name>_step_max), the steps in tasks of 16 rows with the row
// maximum in lanes along its innermost feature (max is exact in any order), then
// the int8 values (rows_at_root; stored as int16 without quads) and, for the
// quads, each row's sum. Zen 5, 2 threads, batch 8, harness medians of 5
// interleaved rounds, before -> after cpu/lanes.hpp and the partitioned loops:
// q_projection_int8 8.1 -> 7.5 us and 10.7 -> 10.2 (a slower hour), out 10.2 ->
// 9.4, ffn_relu_int8 46.7 -> 42.2 and 50.4 -> 47.4.
struct int8_inputs {
  static constexpr const char* head_projection_x = "x_quantized";
  static std::vector<knob_decl> knobs() { return panel_knobs(); }
  static void gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in) {
    panel_gemm(ctx, g, target, k, in);
  }
  static void prepare(const dsl::lowering& ctx, const std::string& name, const Halide::Target& target) {
    const int vec = target.natural_vector_size<int32_t>();
    Halide::Func step = ctx.stage(name + "_step");
    step.compute_root();
    in_row_tasks(step, input_rows_per_task).vectorize(row_in_task(), vec, Halide::TailStrategy::GuardWithIf);
    row_reduction_in_lanes(ctx.stage(name + "_step_max"), ctx.rdom(name + "_step"), vec);
    if (!ctx.int8_quads) {
      rows_at_root(ctx.stage(name + "_i16"), target); // the int8 values inline: their int16 copy (lower_quantize.hpp)
      return;
    }
    rows_at_root(ctx.stage(name), target);
    // Each row's sum, for the quads' correction (lower_quantize.hpp).
    row_reduction_in_lanes(ctx.stage(name + "_sum"), ctx.rdom(name + "_sum"), vec);
  }
};
// The inputs of the bfloat16 GEMMs (dsl::to_bfloat16): rounded at root.
struct bf16_inputs {
  static constexpr const char* head_projection_x = "x_bf16";
  static std::vector<knob_decl> knobs();
  static void gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in);
  static void prepare(const dsl::lowering& ctx, const std::string& name, const Halide::Target& target) {
    rows_at_root(ctx.stage(name), target);
  }
};

// The output's tiles in prefill: `outputs` x `rows` of t, the last ones shifted
// inwards, the row tiles outside, so a row's inputs stay in L1 while the task's
// weight rows are read from memory once and then from L2 by each row tile. A
// task owns `tiles_per_task` tiles of outputs (at 32 x 4 outputs of d_model 512,
// 64 KiB of weight rows) of one head. The innermost tile loop is named "tile"
// in every branch: the sums are computed there.
inline void quantized_output(const gemm_stage& g, Halide::Stage s, int outputs, int tile_rows, int tiles_per_task) {
  using namespace Halide;
  Var tile("tile"), oi("oi"), ro("ro"), ri("ri"), task("task");
  s.split(g.o, tile, oi, outputs, TailStrategy::ShiftInwards)
      .split(g.t, ro, ri, tile_rows, TailStrategy::ShiftInwards)
      .split(tile, task, tile, tiles_per_task, TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{oi, ri, tile, ro, task};
  order.insert(order.end(), g.mid.begin(), g.mid.end());
  order.push_back(g.batch);
  s.reorder(order).unroll(oi).unroll(ri);
  for (const Var& m : g.mid) // the heads of a head projection: more tasks
    s.fuse(task, m, task);
  s.fuse(task, g.batch, task).parallel(task);
}

// The bytes of one weight row (one output's inputs).
inline Halide::Expr weight_row_bytes(const gemm_stage& g) {
  Halide::Expr bytes = g.weights.defined() ? g.weights.type().bytes() : 1;
  for (const Halide::RVar& r : g.r)
    bytes *= r.extent();
  return bytes;
}

// A decode step's tiles: `outputs` x `rows` of the batch, every row of the step
// inside each output tile, so a tile's weight rows (2 KiB) are read once, from
// memory, and serve the whole batch from L1, the task's weights one sequential
// stream; the batch's inputs (int16, 1 KiB a row at d_model 512: <= 128 KiB at
// 128 rows) stay in L1/L2. With the row tiles outside, each task fetched its
// weights from memory during its first row tile alone, with nothing to overlap,
// then re-read them from L2 (Zen 3, 2 threads, logits_int8 at d_model 512, vocab
// 32000: batch 8 2.9 -> 2.4 ms, batch 32 7.6 -> 6.6 ms (medians of interleaved
// rounds); prefill S = 128 x 8 the same either way).
// A task streams at least `decode_task_kib` of weights (and holds at least
// tiles_per_task of the knobs' tiles): a chunk of one head's (or the output's)
// tiles, or, where a head holds less, a group of whole heads (their weight rows
// are contiguous). Small tasks cost their dispatch and the set-up of every tile
// loop, and each starts its weight streams cold (Zen 5, 2 threads, harness
// medians, tasks of 32-64 KiB -> 128 KiB: logits_int8 at batch 1 0.32 -> 0.28
// ms, out_projection_int8 0.011 -> 0.0066, ffn_relu_int8 0.039 -> 0.035;
// qkv_projection_int8, a task per head (32 KiB) -> four heads: 0.031 -> 0.018;
// 64 KiB was slower for all four, 512 KiB for the head projections, 0.023 ms,
// and within 10% for the others). Each output tile prefetches the weight rows
// of the tile `tile_prefetch` ahead; its rows start short runs far from the
// previous tile's, which the hardware prefetchers pick up late (Zen 4,
// logits_int8 in 2 x 4 tiles at batch 8: 2.8 -> 1.9-2.1 ms).
// One row's 1 x 1 tiles read their rows in order, one stream the hardware
// follows, and take no prefetch (Zen 5, logits_int8 at batch 1: 0.28 ms
// without, 0.37 with the knobs' 2 ahead).
inline void quantized_decode_output(const gemm_stage& g, Halide::Stage s, int outputs, int tile_rows,
                                    const knob_values& k) {
  using namespace Halide;
  Var oo("oo"), oi("oi"), ot("ot"), tile("tile"), ri("ri"), task("task"), hg("hg"), hi("hi");
  const Expr tile_bytes = outputs * weight_row_bytes(g), want = k["decode_task_kib"] * 1024;
  const Expr tiles =
      max(std::max(1, k["tiles_per_task"] * k["dot_outputs"] / outputs), (want + tile_bytes - 1) / tile_bytes);
  s.split(g.o, oo, oi, outputs, TailStrategy::ShiftInwards)
      .split(g.batch, tile, ri, tile_rows, TailStrategy::ShiftInwards)
      .split(oo, ot, oo, tiles, TailStrategy::GuardWithIf);
  if (g.mid.empty()) {
    s.reorder(oi, ri, tile, oo, ot, g.t).fuse(ot, g.t, task);
  } else { // heads: groups of whole heads of at most a task's bytes
    const Expr heads = max(1, want / (g.o_extent * weight_row_bytes(g)));
    s.split(g.mid[0], hg, hi, heads, TailStrategy::GuardWithIf)
        .reorder(oi, ri, tile, oo, hi, ot, hg, g.t)
        .fuse(ot, hg, task)
        .fuse(task, g.t, task);
  }
  s.unroll(oi).unroll(ri).parallel(task);
  if (k["tile_prefetch"] > 0 && tile_rows > 1 && g.weights.defined())
    s.prefetch(g.weights, oo, oo, k["tile_prefetch"]);
}

// A decode step's tiles: the knobs' outputs x rows, then, for batches of fewer
// rows, tiles of half the rows and twice the outputs while they fit the
// registers (sums + weights + inputs), down to two rows. A tile of more rows
// widens each weight vector for more products (AVX2, 2 x 4: 2 widenings per 8
// pmaddwd, 4 x 2: 4), but a batch of fewer rows than the tile would fall back to
// one output and row (Zen 3, logits_int8, one thread, interleaved: 2 x 4 against
// 4 x 2 1.12-1.56x faster at batch 8, 0.69-0.92x at batch 3 without this ladder).
// One row keeps one output per tile: a tile of several outputs reads several
// weight rows side by side, which a Zen 4 streams at half the rate of one row
// (logits_int8 at batch 1: 8 x 1 tiles 2.1 ms, 1 x 1 0.7). A task keeps its
// outputs: tiles_per_task counts tiles of the knobs' width.
inline std::vector<std::pair<int, int>> decode_tiles(int outputs, int rows, const Halide::Target& target) {
  const int registers = target.has_feature(Halide::Target::AVX512) ? 32 : 16;
  std::vector<std::pair<int, int>> tiles{{outputs, rows}};
  while (rows % 2 == 0 && rows / 2 >= 2 && 2 * outputs * (rows / 2) + 2 * outputs + rows / 2 <= registers) {
    outputs *= 2;
    rows /= 2;
    tiles.emplace_back(outputs, rows);
  }
  return tiles;
}

// The GEMM: register tiles of partial sums (intm, one vector per output and row)
// over the whole reduction, then summed across lanes into the accumulator. The
// reduction is split once here (rfactor), so the kernel takes one knob set:
// shape buckets are refused.
inline void quantized_gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                           const bucket_scope& in) {
  using namespace Halide;
  if (in.conditioned())
    throw std::invalid_argument("the bfloat16 GEMM schedule takes one knob set: no shape buckets");
  const int vec = target.natural_vector_size<int32_t>(), O = k["dot_outputs"], R = k["dot_rows"];
  const int group = 2; // products summed per instruction (vdpbf16ps)
  Var u("u"), tile("tile");
  RVar ko("ko"), kl("kl"), lane("lane"), pair("pair");
  g.acc.update().split(g.r[0], ko, kl, group * vec, TailStrategy::GuardWithIf).split(kl, lane, pair, group);
  Func sums = g.acc.update().rfactor(lane, u);
  const Expr decode = g.t_extent == 1;
  // Tiles where the reduction is whole blocks (dsl::lowering::whole_blocks): Zen 5,
  // 2 threads, logits_int8 at batch 8 0.62 -> 0.40 ms, batch 32 1.37 -> 1.04;
  // other reductions take the general 1 x 1 tiles.
  const Expr whole = ctx.whole_blocks(g.acc);
  // Tiles where the output and the rows have room for them, else one output and row.
  // A decode step of one row takes 1 x 1 tiles.
  const int tasks = k["tiles_per_task"];
  auto steps = decode_tiles(O, R, target);
  steps.emplace_back(1, 1);
  for (const auto& [outputs, rows] : steps)
    quantized_decode_output(g, g.out.specialize(whole && decode && g.o_extent >= outputs && g.batch_extent >= rows),
                            outputs, rows, k);
  quantized_output(g, g.out.specialize(whole && !decode && g.o_extent >= O && g.t_extent >= R), O, R, tasks);
  quantized_output(g, g.out, 1, 1, tasks);
  g.acc.compute_at(g.out, tile);
  // A tile's float sums keep one tree per output and row, the order every tile
  // shape shares (a row's bits the same in any batch).
  g.acc.update().atomic().vectorize(lane);
  std::vector<Var> storage{u, g.o, g.t};
  storage.insert(storage.end(), g.mid.begin(), g.mid.end());
  storage.push_back(g.batch);
  sums.compute_at(g.out, tile).reorder_storage(storage).bound_storage(u, vec);
  sums.vectorize(u);
  // The tile's outputs and rows innermost, around the pairs: a register tile per
  // step of the reduction (the out projection's heads are its outer reduction).
  std::vector<VarOrRVar> order{pair, u, g.o, g.t, g.batch, ko};
  order.insert(order.end(), g.r.begin() + 1, g.r.end());
  sums.update().reorder(order).atomic().vectorize(pair).vectorize(u).unroll(g.o).unroll(g.t).unroll(g.batch);
}

inline std::vector<knob_decl> bf16_inputs::knobs() { return bf16_gemm_knobs(); }
inline void bf16_inputs::gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target,
                              const knob_values& k, const bucket_scope& in) {
  quantized_gemm(ctx, g, target, k, in);
}

// The kernels, for int8_inputs or bf16_inputs.
template <class Inputs>
void dot_product_logits(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                        const bucket_scope& in) {
  Inputs::prepare(ctx, "logits_x", target);
  Inputs::gemm(ctx, logits_stage(ctx, out), target, k, in);
}

// q, k and v of one prepared x.
template <class Inputs>
void dot_product_head_projection(const dsl::lowering& ctx,
                                 const std::vector<std::pair<std::string, Halide::Func>>& outs,
                                 const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  Inputs::prepare(ctx, Inputs::head_projection_x, target);
  for (gemm_stage g : head_projection_stages(ctx, outs)) {
    const std::string stage = ctx.stage_name(g.acc); // "<which>_proj" reads "w_<which>" (dsl/kernels.hpp)
    g.weights = ctx.input_parameter("w_" + stage.substr(0, stage.find('_')));
    Inputs::gemm(ctx, g, target, k, in);
  }
}

template <class Inputs>
void dot_product_out_projection(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target,
                                const knob_values& k, const bucket_scope& in) {
  Inputs::prepare(ctx, "proj_x", target);
  Inputs::gemm(ctx, out_projection_stage(ctx, out), target, k, in);
}

// The FFN's knobs: the GEMM's for the second GEMM, hidden_* for the first.
inline std::vector<knob_decl> int8_ffn_knobs() { return ffn_knob_decls(panel_knobs()); }
inline std::vector<knob_decl> bf16_ffn_knobs() { return ffn_knob_decls(bf16_gemm_knobs()); }

// x prepared, the first GEMM into the activated hidden layer at root, which is
// prepared per row for the second.
template <class Inputs>
void dot_product_ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                     const bucket_scope& in) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  Inputs::prepare(ctx, "hidden_x", target);
  hidden.out.compute_root();
  Inputs::gemm(ctx, hidden, target, hidden_knobs(k, Inputs::knobs()), in);
  Inputs::prepare(ctx, "proj_x", target);
  Inputs::gemm(ctx, proj, target, k, in);
}

} // namespace halformer::schedules::cpu
