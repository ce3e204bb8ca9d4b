// The decode step's GEMM schedules (t == 1), for gemm.hpp: bound by streaming the
// weights at small batches, by the FMAs at large ones.
#pragma once

#include "halformer/schedules/gemm_stages.hpp"

#include <algorithm>

namespace halformer::schedules::cpu {

// The decode specializations of a GEMM's output, accumulator and its update.
struct decode_stages {
  Halide::Stage out, acc, update;
};

// With several rows, a one-row tile's chunk grows with the batch: gemv_k x batch
// weight rows, at most 16 KiB of the tile's columns (in L1 with the rows' inputs
// and accumulators; 128 rows at most). Each chunk's first row reads the chunk
// from memory and the others reuse it from L1 with no weights in flight, so
// short chunks left the memory idle for most of a step. Zen 5, 2 threads, hand
// defaults, harness medians, 16 rows -> this rule (64 rows for 4-vector tiles):
// qkv_projection at batch 8 0.133-0.136 -> 0.088-0.090 ms, batch 4 0.113-0.120
// -> 0.067 (128 rows: 0.056); ffn_relu at batch 4 0.289-0.294 -> 0.177-0.180;
// logits at batch 4 2.59 -> 1.69-1.73 (8 rows: 2.15); batch 1 unchanged (logits
// 1.17-1.31 ms for 8 to 128 rows). The out projection, whose reduction is d_k x
// heads, takes one head's d_k rows (64: 16 KiB of 4-vector tiles) at every
// batch: Zen 5, 2 threads, interleaved harness medians, chunks of gemv_k (16) ->
// d_k: batch 1 0.013 -> 0.0117 ms, 4 0.031 -> 0.019, 8 0.039-0.041 -> 0.0265,
// 16 0.054 -> 0.042.
inline Halide::Expr row_tile_chunk(const gemm_stage& g, int tile_floats, const knob_values& k) {
  if (g.r.size() > 1)
    return g.r[0].extent();
  const int most = std::max(k["gemv_k"], std::min(128, 16 * 1024 / (4 * tile_floats)));
  return Halide::min(k["gemv_k"] * Halide::max(1, g.batch_extent), most);
}

// Decode steps (t == 1) are bound by streaming the weights, whose rows (one
// reduction index each) are contiguous over the output features. A register tile
// that walked the whole reduction would read a few dozen bytes of every row in
// turn: hundreds of interleaved streams that defeat the prefetchers and the TLB
// (6 GB/s of ~20 on a Zen 2 at batch 8). So the reduction is cut into chunks of
// `gemv_k` rows; a task streams each chunk's rows side by side across its whole
// column block (long runs the prefetchers follow), and for each tile of
// `gemv_vectors` vectors the chunk (gemv_k x tile floats, in L1) is applied to
// every batch row in turn, the row's accumulators held in registers over the
// chunk and kept in the task's accumulator block (L1/L2) between chunks. One row
// per tile keeps the tile's addresses a constant apart, which is what lets the
// compiler hold them in registers (several rows would sit a runtime stride apart
// and be reloaded every step). Per weight row: gemv_vectors loads + 1 broadcast
// for gemv_vectors FMAs, so batches up to ~2 x the vector width stay
// bandwidth-bound. Register budget: 3 accumulators + 3 weights + 1 broadcast.
// Every output still sums its rows in order, as the blocked branch does, and the
// same code runs at every batch size: a row's result is bitwise the same in any
// batch. The gemv_* knobs belong to the decode branches alone.
// A tile wider than the output (a head of d_k 32 under 8-vector tiles) would run
// masked: each narrower tile (halving gemv_vectors) is a specialization taken
// when the output is at least that wide (d_k 32, 2 threads, Zen 2: qkv at 32
// rows 0.49 -> 0.047 ms).
inline void schedule_row_tiles_acc(const gemm_stage& g, Halide::Stage pure, Halide::Stage update, int vec,
                                   const knob_values& k) {
  using namespace Halide;
  pure.vectorize(g.o, vec, TailStrategy::GuardWithIf);
  const auto tiles = [&](Stage u, int vectors) {
    RVar ko("ko"), ki("ki");
    Var ot("ot"), ov("ov");
    u.split(g.o, ot, ov, vec * vectors, TailStrategy::GuardWithIf)
        .split(g.r[0], ko, ki, row_tile_chunk(g, vec * vectors, k), TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> order{ov, ki, g.batch, ot};
    order.insert(order.end(), g.mid.begin(), g.mid.end());
    order.push_back(g.t);
    order.push_back(ko);
    order.insert(order.end(), g.r.begin() + 1, g.r.end());
    u.reorder(order).vectorize(ov, vec).unroll(ov);
  };
  for (int vectors = k["gemv_vectors"]; vectors > 1; vectors /= 2)
    tiles(update.specialize(g.o_extent >= vec * vectors), vectors);
  tiles(update, 1);
}

// The one-row tiles' tasks: the output's tasks own column blocks of at most `gemv_cols`
// features, and at least `gemv_min_tasks` of them where the width allows, so
// that a d_model-wide output still keeps every core streaming (head projections:
// groups of whole heads, whose weights are contiguous; d_k is the call's).
inline void schedule_row_tiles_output(const gemm_stage& g, Halide::Stage s, int vec, const knob_values& k) {
  using namespace Halide;
  Var oo("oo"), oi("oi"), hi("hi");
  const int tile = vec * k["gemv_vectors"], tasks = k["gemv_min_tasks"];
  if (g.mid.empty()) {
    const Expr even = (g.o_extent + tasks * tile - 1) / (tasks * tile) * tile;
    const Expr cols = Halide::min(k["gemv_cols"], Halide::max(tile, even));
    s.split(g.o, oo, oi, cols, TailStrategy::GuardWithIf).reorder(oi, g.t, g.batch, oo).vectorize(oi, vec).parallel(oo);
  } else { // mid = {heads}: tasks over groups of heads ("oo", the accumulator's level)
    const Expr even = (g.mid_extent + tasks - 1) / tasks;
    const Expr group = Halide::max(1, Halide::min(Halide::max(1, k["gemv_cols"] / g.o_extent), even));
    s.split(g.mid[0], oo, hi, group, TailStrategy::GuardWithIf)
        .reorder(g.o, g.t, hi, g.batch, oo)
        .vectorize(g.o, vec, TailStrategy::GuardWithIf)
        .parallel(oo);
  }
}

// From `gemv_rows` batch rows on, a register tile holds `vectors` vectors x
// gemv_rows rows (the prefill tile's register budget: AVX2 3 x 4 = 12
// accumulators + 3 weights + 1 broadcast of 16; AVX-512 3 x 8 = 24 of 32): per
// weight row 3 loads and gemv_rows broadcasts feed 3 x gemv_rows FMAs, so large
// batches run at the FMA rate, not the load rate. Its rows sit one task width
// apart in the task's accumulator block; for the compiler to keep them in
// registers that width must be a compile-time constant, so each width of a
// ladder (gemv_cols, gemv_cols / 2, ... 128 features) is a specialization,
// taken when the output has room for gemv_min_tasks tasks of it and a task's
// accumulators (width x batch) fit in gemv_acc_kib, which keeps them near the
// core between chunks (on a Zen 2 with 512 KiB of L2, logits at batch 32 take
// 13.3 ms with 2048-wide tasks, 10.9 with 512); the tasks cover the output
// exactly (the last one shifted inwards). Outputs in heads
// (whose width, d_k, is the call's) and narrower ones keep the one-row tiles.
// The reduction runs in the same order as the one-row tiles': bitwise the same.
// A chunk's weights for the tile `wide_tile_prefetch_distance` tiles ahead are
// prefetched at each tile: a tile's gemv_k weight rows each start a short run
// (one tile wide) far from the previous tile's (a weight row is the whole output
// wide), which the hardware prefetchers pick up late, so each tile waited for
// its weights and then computed (at 8 rows the two take about as long). Zen 3,
// logits at d_model 512, vocab 32000, batch 8, interleaved: 6.8-7.5 -> 5.4-6.3
// ms on 2 threads, 13.1-14.6 -> 9.6-11.0 on one; 8 and 16 tiles ahead gained
// less; batch 32 (bound by the multiply-adds) the same.
inline constexpr int wide_tile_prefetch_distance = 4;

// A wide task's chunk of weight rows grows with the batch. Each chunk pass reads
// and writes the task's whole accumulator block (cols x batch floats, in L2) once,
// against chunk x cols floats of weights: at a fixed chunk that traffic grows with
// the batch, until it, not the weights, bounds the kernel (Zen 5, logits at d_model
// 512, vocab 32000, 2 threads, harness medians: batch 32 with chunks of 8 rows 7.6
// ms, 16 4.8-5.0, 32 4.4, 64 4.3; batch 16: 8 2.9, 16 2.5, 32 2.7; batch 8 flat,
// 1.7-1.9 ms for 4 to 32). So `gemv_k` is the chunk at the batch the decode knobs
// are tuned at (the presets' decode step, 8 rows; a Zen 3 measured 8 rows better
// than 16 for logits there, where DRAM is slower), and a larger batch's chunk is
// gemv_k times its batch over that one (at most 128 rows): the accumulator traffic
// per weight byte stays that of the tuned batch. The chunk is a runtime split
// factor (its loop is neither unrolled nor vectorised), so no branch is added.
// It grows to at most `gemv_k_most` rows: each tile prefetches its chunk ahead
// (chunk rows x the tile's cache lines, in one burst), and a burst larger than
// the misses a core keeps in flight stalls the tile's FMAs behind it. Zen 3
// (AVX2 tiles of 3 ymm, 96 B), 2 threads, interleaved harness medians, at most
// 128 -> 16 rows: logits (d_model 512, vocab 32000) at batch 32 10.5-10.7 -> 8.5-8.8
// ms (chunks of 32 -> 16 rows), ffn_relu at batch 32 1.59 -> 1.40 (64 -> 16);
// batch 8 and 16 the same (chunks within 16 rows either way). A Zen 5 (3-zmm
// tiles) read larger chunks faster (above): AVX-512 keeps 128.
inline constexpr int decode_knobs_batch = 8;

inline Halide::Expr wide_tile_chunk(const gemm_stage& g, const knob_values& k) {
  const int most = std::max(1, k["gemv_k_most"] / k["gemv_k"]);
  return k["gemv_k"] * Halide::clamp(g.batch_extent / decode_knobs_batch, 1, most);
}

inline void schedule_wide_tiles(const gemm_stage& g, decode_stages d, const Halide::Expr& cond, int cols, int vec,
                                const knob_values& k) {
  using namespace Halide;
  Var oo("oo"), oi("oi"), ot("ot"), ov("ov"), bo("bo"), bi("bi");
  RVar ko("ko"), ki("ki");
  Stage out = d.out.specialize(cond), pure = d.acc.specialize(cond), u = d.update.specialize(cond);
  out.split(g.o, oo, oi, cols, TailStrategy::ShiftInwards)
      .reorder(oi, g.t, g.batch, oo)
      .vectorize(oi, vec)
      .parallel(oo);
  pure.vectorize(g.o, vec);
  u.split(g.o, ot, ov, vec * k["vectors"], TailStrategy::GuardWithIf)
      .split(g.batch, bo, bi, k["gemv_rows"], TailStrategy::GuardWithIf)
      .split(g.r[0], ko, ki, wide_tile_chunk(g, k), TailStrategy::GuardWithIf);
  std::vector<VarOrRVar> order{ov, bi, ki, bo, ot, g.t, ko};
  order.insert(order.end(), g.r.begin() + 1, g.r.end());
  u.reorder(order).vectorize(ov, vec).unroll(ov).unroll(bi);
  if (g.weights.defined())
    u.prefetch(g.weights, ot, ot, wide_tile_prefetch_distance);
}

// Every decode branch: the wide tiles' ladder, then the one-row tiles. The out
// projection (a reduction of d_k x heads) keeps one-row tiles at every batch: its
// whole-head chunks beat the wide tiles (Zen 5, 2 threads, harness medians, the
// hand defaults' wide tiles -> one-row tiles: batch 8 0.037-0.045 -> 0.0265 ms,
// 16 0.052 -> 0.042, 32 0.070 either way).
inline void schedule_decode(const gemm_stage& g, decode_stages d, int vec, const knob_values& k) {
  const int rows = k["gemv_rows"], tasks = k["gemv_min_tasks"];
  if (g.mid.empty() && g.r.size() == 1 && rows > 1)
    for (int cols = k["gemv_cols"]; cols >= 128; cols /= 2)
      schedule_wide_tiles(g, d,
                          g.batch_extent >= rows && g.o_extent >= tasks * cols &&
                              cols * g.batch_extent <= k["gemv_acc_kib"] * 256,
                          cols, vec, k);
  schedule_row_tiles_output(g, d.out, vec, k);
  schedule_row_tiles_acc(g, d.acc, d.update, vec, k);
}

} // namespace halformer::schedules::cpu
