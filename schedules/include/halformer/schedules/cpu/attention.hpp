// CPU schedule of attention (see dsl/lower.hpp for the chunked algorithm).
//
// Parallel over (head, batch row); per head the keys are transposed once into
// k_t (key index innermost, so q.k vectorises across keys). Queries are processed
// `q_tile` at a time: for one tile every chunk's scores, max, exponentials, sums and
// partial outputs are computed, then merged; so the largest temporary is
// q_tile x Tk floats, never Tq x Tk (q_tile 4, Tk 2048: 32 KiB, in L1/L2).
// Register budget of the q.k product: kv_chunk / lanes x q_tile accumulators
// (AVX-512: 64/16 x 4 = 16 zmm; AVX2: 32/8 x 4 = 16 ymm — then k_t vectors
// are reloaded, fine since they come from L1).
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> attention_knobs() {
  return {
      {"kv_chunk", {16, 32, 64, 128, 256}, "keys per chunk (algorithm parameter)", true},
      {"q_tile", {1, 2, 4, 8}, "queries per tile (unrolled in q.k)"},
  };
}

inline void attention(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                      const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  const int qt = k["q_tile"], chunk = k["kv_chunk"];
  const int lanes = std::min(vec, chunk);
  Var d("d_k"), t("t"), h("heads"), b("batch"), kk("kk"), c("c"), to("to"), ti("ti"), hb("hb");
  auto s = [&](const char* n) { return ctx.stage(std::string("attention_") + n); };
  const RDom rd = ctx.rdom("attention_scores"), rk = ctx.rdom("attention_chunk"), rc = ctx.rdom("attention_merge");

  // Directives before specialize() hold in every branch; each branch then tiles t.
  in(out).fuse(h, b, hb).parallel(hb).vectorize(d, vec, TailStrategy::GuardWithIf);
  // d_k == 64 (Transformer-base) and 32 (smaller models) get branches of their
  // own: with d_k a constant, the p.v accumulator (d_k x q_tile floats) has a
  // constant size and lives in registers (AVX-512, d_k 64: 4 x q_tile zmm) instead
  // of being loaded and stored every step. Measured (2 threads, AVX-512, tuned
  // kv_chunk 32 / q_tile 8, 8 heads, S = 512, d_k 64): 70 -> 130 GFLOP/s; (Zen 2,
  // d_k 32, 4 heads x 32 sentences of 24 tokens): 0.48 -> 0.40 ms.
  const std::vector<Expr> fixed_dk{ctx.extent("d_k") == 64, ctx.extent("d_k") == 32};
  for (const Expr& dk : fixed_dk)
    in(out).specialize(dk && ctx.extent("t") >= qt).split(t, to, ti, qt, TailStrategy::ShiftInwards);
  in(out).specialize(ctx.extent("t") >= qt).split(t, to, ti, qt, TailStrategy::ShiftInwards);
  in(out).split(t, to, ti, 1);

  s("k_t").compute_at(out, hb);
  in(s("k_t")).vectorize(kk, lanes);
  // Per query tile: logits, chunk maxima, exponentials and sums for every chunk.
  for (const char* n : {"logits", "chunk_max", "p", "chunk_sum", "max", "weight", "sum", "out_unnormalized"})
    s(n).compute_at(out, to);
  // q.k one chunk at a time: a (kv_chunk x q_tile) accumulator of constant size,
  // so it lives in registers across the d_k reduction.
  in(s("logits")).reorder(kk, t, c).vectorize(kk, lanes);
  s("scores").compute_at(s("logits"), c);
  in(s("scores")).vectorize(kk, lanes);
  in.update(s("scores")).reorder(kk, t, rd.x).vectorize(kk, lanes).unroll(kk).unroll(t);
  in(s("p")).vectorize(kk, lanes);
  // Chunk maxima and sums: tree reductions across the chunk's lanes (max is exact;
  // the sum reassociates, within the 1e-5 tolerance).
  in.update(s("chunk_max")).atomic().vectorize(rk.x, lanes);
  in.update(s("chunk_sum")).atomic().vectorize(rk.x, lanes);
  // p.v likewise, one chunk at a time inside the merge over chunks.
  in(s("out_unnormalized")).vectorize(d, vec, TailStrategy::GuardWithIf);
  in.update(s("out_unnormalized")).reorder(d, t, rc.x).vectorize(d, vec, TailStrategy::GuardWithIf);
  s("chunk_out").compute_at(s("out_unnormalized"), rc.x);
  in(s("chunk_out")).vectorize(d, vec, TailStrategy::GuardWithIf);
  for (const Expr& dk : fixed_dk)
    in.update(s("chunk_out")).specialize(dk).reorder(d, t, rk.x).vectorize(d, vec).unroll(d).unroll(t);
  in.update(s("chunk_out")).reorder(d, t, rk.x).vectorize(d, vec, TailStrategy::GuardWithIf).unroll(t);
}

} // namespace halformer::schedules::cpu
