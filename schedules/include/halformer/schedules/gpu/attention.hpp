// GPU schedule of attention (the chunked algorithm of dsl/lower.hpp).
//
// One thread block per (query tile, head, batch row). Per block, for `q_tile`
// queries: the block's keys are staged one chunk at a time into shared memory
// (k_t, kv_chunk x d_k floats: 8 KiB at 32 x 64), scores and exponentials of
// every chunk are computed by kv_chunk x q_tile threads, chunk maxima and sums by
// one thread per (chunk, query), and then each thread of a (threads_d x q_tile)
// grid accumulates one output element over every chunk (p.v; v reads are coalesced
// along d_k). The per-block logits and exponentials, q_tile x Tk floats, are kept
// in global scratch (MemoryType::Heap, L2-resident on a real GPU) so that long
// sources never exceed shared memory; every other temporary is in shared memory
// or registers.
//
// Decode steps (one query) give one block per (head, batch row).
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/knobs.hpp"

namespace halformer::schedules::gpu {

inline std::vector<knob_decl> attention_knobs() {
  return {
      {"kv_chunk", {16, 32, 64, 128}, "keys per chunk (algorithm parameter; threads per query for scores)", true},
      {"q_tile", {1, 2, 4, 8}, "queries per block"},
      {"threads_d", {16, 32, 64, 128}, "threads along d_k for the p.v product"},
  };
}

inline void attention(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  using namespace Halide;
  const int qt = k["q_tile"], td = k["threads_d"];
  constexpr int chunk_threads = 32; // threads across chunks for the per-chunk statistics
  Var d("d_k"), t("t"), h("heads"), b("batch"), kk("kk"), c("c"), to("to"), ti("ti"), hb("hb"), dout("dout"), di("di"),
      co("co"), ci("ci");
  auto s = [&](const char* n) { return ctx.stage(std::string("attention_") + n); };
  const RDom rd = ctx.rdom("attention_scores"), rk = ctx.rdom("attention_chunk"), rc = ctx.rdom("attention_merge");

  out.fuse(h, b, hb)
      .split(t, to, ti, qt, TailStrategy::GuardWithIf)
      .split(d, dout, di, td, TailStrategy::GuardWithIf)
      .reorder(di, ti, dout, to, hb)
      .gpu_blocks(to, hb)
      .gpu_threads(di, ti);

  // Scores and exponentials of the whole tile: threads over (key in chunk, query).
  for (const char* n : {"logits", "p"})
    s(n).compute_at(out, to).store_in(MemoryType::Heap).reorder(kk, t, c).gpu_threads(kk, t);
  s("k_t").compute_at(s("logits"), c).reorder(d, kk).gpu_threads(kk);
  s("scores").compute_at(s("logits"), kk);
  s("scores").update().unroll(rd.x, 4, TailStrategy::GuardWithIf);

  // Per (chunk, query) statistics: one thread each, chunks in groups of 32.
  for (const char* n : {"chunk_max", "chunk_sum", "weight"}) {
    s(n).compute_at(out, to)
        .split(c, co, ci, chunk_threads, TailStrategy::GuardWithIf)
        .reorder(ci, t, co)
        .gpu_threads(ci, t);
    if (std::string(n) != "weight")
      s(n).update().split(c, co, ci, chunk_threads, TailStrategy::GuardWithIf).reorder(ci, t, co).gpu_threads(ci, t);
  }
  for (const char* n : {"max", "sum"}) {
    s(n).compute_at(out, to).gpu_threads(t);
    s(n).update().gpu_threads(t);
  }
  // p.v: each output thread accumulates its element over the chunks in registers.
  s("out_unnormalized").compute_at(out, di);
  s("chunk_out").compute_at(s("out_unnormalized"), rc.x);
  s("chunk_out").update().unroll(rk.x, 4, TailStrategy::GuardWithIf);
}

} // namespace halformer::schedules::gpu
