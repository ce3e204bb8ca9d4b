// CPU schedule of the embedding: a gather of d_model-wide rows plus sinusoidal
// positions. Memory-bound (one row read and one written per token), so rows are
// vectorised and each parallel task takes `rows_per_task` tokens. A float32
// table lies in panels (dsl/kernels.hpp: the logits' weight), a token's row one
// float per 64-byte line: its features are gathered, from consecutive lines the
// hardware prefetchers follow (at d_model 512 a row touches 32 KiB for its 2). Ids are
// checked once at root, before any row is read, so an out-of-range id fails the
// call with a message instead of reading another token's row.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/cpu/rows.hpp"

namespace halformer::schedules::cpu {

// The row loop's knobs; the embedding has no row reduction to vectorise.
inline std::vector<knob_decl> embedding_knobs() {
  auto k = row_knobs();
  k.erase(std::remove_if(k.begin(), k.end(), [](const knob_decl& d) { return d.name == "vectorize_reductions"; }),
          k.end());
  return k;
}

inline void embedding(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                      const bucket_scope& in) {
  detail::rows_loop(out, "d_model", ctx.extent("d_model"), target, k, in);
  ctx.stage("rows_ids").compute_root();
  // Positions depend on (d_model, t) only: computed once, vectorised, and shared
  // by every batch row, instead of a sin or cos per output element (compare
  // showed the autoschedulers doing this at 3.5x our speed before). Each
  // position's sines and cosines (one per pair of features) are computed ahead
  // of it, the frequencies once per call: inlined, every feature evaluated an
  // exp, a sine and a cosine (Zen 3, 2 threads, interleaved harness medians,
  // d_model 512: S = 128 0.19 -> 0.116 ms, S = 2048 4.3 -> 2.2 ms; with libm's
  // scalar sin and cos before that, 0.39 and 7.3 ms, and a decode step of 8 rows
  // 5.2 us, now 3.0).
  using Halide::TailStrategy, Halide::Var;
  const int vec = target.natural_vector_size<float>();
  Halide::Func positions = ctx.stage("positions");
  positions.compute_root();
  in(positions).vectorize(Var("d_model"), vec, TailStrategy::GuardWithIf).parallel(Var("t"));
  ctx.stage("positions_freq").compute_root();
  in(ctx.stage("positions_freq")).vectorize(Var("pair"), vec, TailStrategy::GuardWithIf);
  for (const char* f : {"positions_sin", "positions_cos"}) {
    ctx.stage(f).compute_at(positions, Var("t"));
    in(ctx.stage(f)).vectorize(Var("pair"), vec, TailStrategy::GuardWithIf);
  }
}

} // namespace halformer::schedules::cpu
