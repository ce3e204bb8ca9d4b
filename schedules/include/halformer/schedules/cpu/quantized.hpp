// CPU schedules of the int8 and bfloat16 GEMM kernels (dsl::quantized_linear,
// dsl::bf16_linear): the input's per-row quantization (or rounding to bfloat16),
// then the panel GEMM (cpu/panels.hpp) over weights in panels: int8 quads or
// pairs, bfloat16 pairs (vdpbf16ps with avx512_vnni, Halide's avx512_zen4).
// bfloat16 in panels against the dot-product layout it had (a weight row per
// output, `vec` partial sums per output and row summed across lanes once at the
// end, 4 x 4 tiles): Zen 4, 2 threads, harness medians of 5 interleaved rounds,
// decode at batch 8: q_projection_bf16 68 -> 27 us, out_projection_bf16 61 ->
// 26, ffn_relu_bf16 400 -> 187, logits_bf16 3.24 -> 1.32 ms; ffn_relu_bf16 at
// batch 32 675 -> 425 us, at batch 1 161 -> 155; q_projection_bf16 prefill of
// 128 rows 286 -> 185 us.
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

// The int8 inputs' row tasks: 16 rows (a row takes well under a microsecond at
// d_model 512; 16 amortise the thread pool's ~1 us dispatch).
constexpr int input_rows_per_task = 16;

// An input's rows stored at `at` (root, or a blocked FFN's row block) before
// the GEMM reads them: its features innermost,
// in row tasks, vectorised along dim 0, the loop over vectors always partitioned
// (a task of fewer than 16 rows kept its guard inside otherwise, cpu/lanes.hpp).
// Rows are (t, batch); the out projection's features are (d_k, heads), stored
// so too: a row's heads one after another, where in the attention's layout
// (d_k, t, heads) a row tile's inputs were 8 blocks a head's t x d_k apart,
// which share cache sets (Zen 4, 2 threads, S = 2048, bench_kernels medians,
// one round each, within the host's noise: out_projection_int8 1.74 -> 1.58
// ms, out_projection_bf16 2.87 -> 2.72).
inline void rows_stored(Halide::Func values, const Halide::Target& target,
                        const Halide::LoopLevel& at = Halide::LoopLevel::root()) {
  using namespace Halide;
  std::vector<Var> order; // the features innermost, in their order, then t and batch
  for (const Var& v : values.args())
    if (v.name() != "t" && v.name() != "batch")
      order.push_back(v);
  order.insert(order.end(), {Var("t"), Var("batch")});
  values.compute_at(at).reorder(std::vector<VarOrRVar>(order.begin(), order.end())).reorder_storage(order);
  Var fo("fo"), fi("fi");
  in_row_tasks(values, input_rows_per_task)
      .split(values.args()[0], fo, fi, target.natural_vector_size(values.type()), TailStrategy::GuardWithIf)
      .vectorize(fi)
      .always_partition(fo);
}

// The inputs of the int8 GEMMs: quantized (dsl::quantize_rows: stages <name>,
// <name>_step and <name>_step_max), the steps in tasks of 16 rows, each row's
// maximum in lanes along its innermost feature (max is exact in any order)
// computed in the step's loop (its own loop at root cost two more loops a
// call: Zen 4, 2 threads, q_projection_int8 at batch 8, harness medians of 11
// interleaved rounds, 11.0 -> 10.8 us), then the int8 values with their
// padding to whole groups (zero_padded: rows_stored; stored offset to
// unsigned bytes for the quads, as int16 for the pairs). With the padding stored, the
// GEMM's tiles have no bounds-tested last step, whose code (a gather per row)
// took a quarter of a tile's time with hot weights (Zen 4, 2 threads, harness
// medians of 5-9 interleaved rounds, inlined -> stored, at batch 8:
// q_projection_int8 14.2 -> 13.2 us, qkv 44.9 -> 41.6, out 14.8 -> 14.0,
// logits 0.646 -> 0.574 ms, ffn_relu_int8 within the noise (106 -> 108 us);
// at batch 32 q 47.7 -> 42.2 us, ffn 292 -> 270; prefill q of 128 rows 118 ->
// 108). The steps and the values share one loop over the row tasks
// (compute_with: one pass over the input, one parallel loop), the values
// computing their own copy of each row's step (clone_in: compute_with refuses
// stages that read each other). Zen 4, 2 threads, harness medians of 5
// interleaved rounds, two loops -> one: out_projection_int8 at S = 512 0.392
// -> 0.376 ms, 2048 1.80 -> 1.80, batch 8 13.3 -> 12.5 us; ffn_relu_int8 at 512
// 2.94 -> 2.85 ms, batch 8 79.1 -> 76.1 us; logits_int8 at batch 8 0.589 ->
// 0.569 ms (qkv at 512 1.05 -> 1.06). Copies of the steps and sums in the
// GEMM's tasks (clone_in) were 45% slower at batch 8 (15.8 us). A batch of 8 in two
// tasks of 4 was slower too (each two-task loop ~0.2 us of dispatch, more than
// the half of its ~0.4 us of work it saves). Zen 5, 2 threads, batch 8, harness medians of 5
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
  // The FFN's hidden layer: in float32 at `at`, then quantized per row (a
  // row's step needs its whole row, which no tile of the first GEMM holds).
  // Per row block, the values' rows are stored a multiple of 64 bytes apart,
  // computed at run time: with a stride the compiler can see is a multiple of
  // 4 (the padding to groups), LLVM computed the decode tiles' 8 row addresses
  // in a vector and extracted them at every step (Zen 4, one thread, batch 8:
  // 0.103 -> 0.121 ms); with this one it keeps a pointer a row (0.105).
  static void ffn_hidden(const dsl::lowering& ctx, gemm_stage hidden, const Halide::Target& target,
                         const knob_values& k, const bucket_scope& in, const Halide::LoopLevel& at, bool in_blocks) {
    hidden.out.compute_at(at);
    gemm(ctx, hidden, target, k, in);
    prepare(ctx, "proj_x", target, at);
    if (in_blocks) {
      Halide::Func values = ctx.stage(ctx.int8_padded_stage("proj_x"));
      const Halide::Expr n = ctx.extent(values.args()[0].name());
      values.bound_storage(values.args()[0], n + (64 - n % 64) % 64);
    }
  }
  static void prepare(const dsl::lowering& ctx, const std::string& name, const Halide::Target& target,
                      const Halide::LoopLevel& at = Halide::LoopLevel::root()) {
    const int vec = target.natural_vector_size<int32_t>();
    const Halide::RDom row = ctx.rdom(name + "_step");
    Halide::Func step = ctx.stage(name + "_step"), step_max = ctx.stage(name + "_step_max"),
                 values = ctx.stage(ctx.int8_padded_stage(name));
    // The values' own copy of each row's step, so that they do not read `step`
    // and may share its loop (compute_with): one pass over the input.
    Halide::Func values_step = step.clone_in(ctx.stage(name + "_inverse")),
                 values_step_max = step_max.clone_in(values_step);
    step.compute_at(at);
    in_row_tasks(step, input_rows_per_task);
    step_max.compute_at(step, row_in_task());
    reduction_in_lanes(step_max, row, vec, 1).compute_at(step, row_in_task());
    // The int8 values inline into their stored copy, zero-padded: offset to
    // unsigned bytes for vpdpbusd's quads, as they are for sdot's, widened to
    // int16 for the pairs (lower_quantize.hpp).
    rows_stored(values, target, at);
    values_step.compute_at(values, row_in_task());
    values_step_max.compute_at(values, row_in_task());
    reduction_in_lanes(values_step_max, row, vec, 1).compute_at(values, row_in_task());
    values.compute_with(step, Halide::Var("row"));
  }
};
// The inputs of the bfloat16 GEMMs (dsl::to_bfloat16): rounded at root, the
// padding (lower_panels.hpp: zero_padded) inlined into the GEMM. Stored at root
// as the int8 inputs' is, a tile's code lost its bounds-tested last step (hot
// weights: the same time), yet the weights streamed slower from memory (Zen 4,
// q_projection_bf16 at batch 8, one thread, 25 -> 39 us; two threads 24 -> 27),
// whose cause was not found: the tiles' loops are the same instructions.
struct bf16_inputs {
  static constexpr const char* head_projection_x = "x_bf16";
  static std::vector<knob_decl> knobs() { return panel_knobs(); }
  static void gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in) {
    panel_gemm(ctx, g, target, k, in);
  }
  static void prepare(const dsl::lowering& ctx, const std::string& name, const Halide::Target& target) {
    rows_stored(ctx.stage(name), target);
  }
  // The FFN's hidden layer: rounded in the first GEMM's epilogue (its output
  // stage is the second GEMM's input, proj_x; the activation inlined), so it is
  // written once, in bfloat16. At root in float32 and rounded in a pass of its
  // own, it was written, read and written again (S = 2048: 16 MiB of floats).
  // Zen 4, 2 threads, ffn_relu_bf16 at S = 2048, bench_kernels medians: 22.3
  // -> 20.3 and 20.9 ms (oneDNN's two bfloat16 matmuls alone, same runs: 19.6, 20.6).
  static void ffn_hidden(const dsl::lowering& ctx, gemm_stage hidden, const Halide::Target& target,
                         const knob_values& k, const bucket_scope& in, const Halide::LoopLevel& at, bool) {
    hidden.out = ctx.stage("proj_x");
    hidden.out.compute_at(at);
    gemm(ctx, hidden, target, k, in);
  }
};

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

// The FFN's knobs (float32, int8 and bfloat16): the panel GEMM's for the second
// GEMM, hidden_* for the first, and the rows of its blocks.
inline std::vector<knob_decl> ffn_knobs() {
  auto k = ffn_knob_decls(panel_knobs());
  k.push_back({"block_rows",
               {0, 32, 64, 128, 256},
               "prefill: rows per block, the hidden layer computed per block while in cache (0: the whole layer at "
               "root)",
               false,
               knob_phase::prefill});
  return k;
}

// The t rows of one of the FFN's row blocks of about `block_rows` rows: a
// share of them per batch row, but at least the tallest register tile's (the
// tiles run along t), at most all of t.
inline Halide::Expr ffn_block_t(const gemm_stage& g, const knob_values& k) {
  const int tallest = std::max(k["tile_rows"], k["hidden_tile_rows"]);
  return Halide::min(g.t_extent, Halide::max(k["block_rows"] / g.batch_extent, tallest));
}

// x prepared, the first GEMM into the activated hidden layer, prepared for the
// second (Inputs::ffn_hidden). Prefill with `block_rows`: the second GEMM's
// rows in serial blocks (its tasks in parallel within each), each block's
// hidden layer computed and prepared there, so it stays in cache where at root
// it went to memory and back (S = 2048: 16 MiB of floats, written, read and
// quantized). Zen 4, 2 threads, harness medians of 2-3 interleaved rounds, at
// root -> blocks of 64 rows: int8 batch 32 x 256 rows 69.0 -> 44.8 ms, S =
// 2048 11.5 -> 11.2; float32 and bfloat16 at batch 32 x 256 171-178 -> 155-165
// and 101 -> 87, at S = 2048 within 1% (their hand defaults keep the root:
// their decode steps were not measured in blocks). The AMX form blocks its rows
// itself (cpu/amx.hpp).
template <class Inputs>
void dot_product_ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                     const bucket_scope& in) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  Halide::LoopLevel at = Halide::LoopLevel::root();
  const bool amx = ctx.amx_condition("hidden").defined() || ctx.amx_condition("proj").defined();
  if (k["block_rows"] > 0 && !amx) {
    proj.block = ffn_block_t(proj, k);
    proj.t_extent = hidden.t_extent = proj.block; // what each block's loops cover
    at = Halide::LoopLevel(proj.out, row_block());
  }
  Inputs::prepare(ctx, "hidden_x", target);
  Inputs::ffn_hidden(ctx, hidden, target, hidden_knobs(k, Inputs::knobs()), in, at, proj.block.defined());
  Inputs::gemm(ctx, proj, target, k, in);
}

} // namespace halformer::schedules::cpu
