// CPU schedule of attention (see dsl/lower_attention.hpp for the algorithms).
//
// Parallel over (head, batch row). Calls of several queries take the chunked
// algorithm: per head the keys are transposed once into k_t (key index innermost,
// so q.k vectorises across keys). Queries are processed in blocks of `q_block`
// (whole rows' softmax; else one tile), each in tiles of `q_tile`: for the block
// the logits of every chunk, then (softmax_lanes > 0, the hand defaults) the
// softmax over the whole rows and p.v over every key, or per tile each chunk's
// softmax and p.v, merged; so the largest temporaries are q_block x Tk floats,
// never Tq x Tk (32 x 2048: 256 KiB, in L2), their allocations hoisted to the
// task. Register budget of q.k: kv_chunk / lanes x q_tile accumulators, of p.v:
// d_k / lanes x q_tile, each summed in parts of at most half the registers
// (accumulator_parts; AVX-512: 64/16 x 4 = 16 zmm; AVX2 at q_tile 2: 32/8 x 2 =
// 8 ymm, p.v's 8 x 2 in two parts). Decode steps
// (dsl::lowering::attention_takes_direct) take the direct algorithm
// (cpu/attention_direct.hpp) unless decode_lanes is 0.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/attention_direct.hpp"
#include "halformer/schedules/cpu/lanes.hpp"
#include "halformer/schedules/cpu/registers.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> attention_knobs() {
  return {
      {"kv_chunk", {16, 32, 64, 128, 256}, "keys per chunk (algorithm parameter)", true},
      {"q_tile", {1, 2, 4, 8}, "queries per tile (unrolled in q.k)"},
      {"q_block",
       {1, 8, 16, 32, 64},
       "several queries, softmax over whole rows: queries per block, each key chunk read once per block"},
      {"softmax_lanes",
       {0, 4, 8, 16},
       "several queries: softmax over whole rows, max and sum in this many lanes (0: per chunk, merged; algorithm)",
       true},
      {"decode_lanes", {0, 4, 8, 16}, "partial sums per key of a decode step's q.k (0: chunked; algorithm)", true},
      // Decode steps only: a decode step of several queries (a source's beams)
      // falls in the prefill bucket, whose tuned shape (the encoder's) never
      // runs the direct algorithm, so a tune there would set it blind (Zen 5:
      // 1 head per task, the beams' cross-attention at 8 sources 0.162 -> 0.209 ms).
      {"decode_heads",
       {1, 2, 4, 8},
       "heads per task of a decode step, their key and value streams interleaved",
       false,
       knob_phase::decode},
  };
}

// The parts (a power of two) a register tile of `accumulators` vectors is
// summed in so that each part holds at most half the vector registers
// (`registers`), beside the operands' loads and broadcasts.
inline int accumulator_parts(int accumulators, int registers) {
  int parts = 1;
  while (accumulators / parts > registers / 2)
    parts *= 2;
  return parts;
}

// The chunked algorithm's stages inside each query block of `out` (its loops
// `hb` and `to`): the keys transposed per head, q.k of every chunk, then either
// the softmax over whole rows (`softmax_lanes` > 0) or each chunk's softmax and
// p.v, merged. A block is split into tiles of q_tile queries (loop `tq`), and
// q.k and p.v take each chunk's keys (values) for every tile of the block
// before the next chunk: a chunk (AVX2: 32 keys x d_k 64, 8 KiB) stays in L1
// while the block's tiles use it, where tile after tile over every key read
// them from L2 (2 x 128 KiB per tile at S = 512, as many bytes a cycle as the
// tile's FMAs).
struct chunked_attention {
  const dsl::lowering& ctx;
  Halide::Func out;
  int vec, registers, chunk, q_tile;
  const std::vector<std::pair<Halide::Expr, int>>& fixed_dk;
  const bucket_scope& in;
  Halide::Var d{"d_k"}, t{"t"}, kk{"kk"}, c{"c"}, hb{"hb"}, to{"to"}, tq{"tq"}, kko{"kko"}, dpo{"dpo"}, l{"lane"};
  Halide::Func s(const char* n) const { return ctx.stage(std::string("attention_") + n); }
  int lanes() const { return std::min(vec, chunk); }
  // Tile heights: q_tile where the call's blocks hold one (calls of q_tile
  // queries or more: out's blocks are then q_tile or more), else one query.
  std::vector<int> heights() const { return q_tile > 1 ? std::vector<int>{q_tile, 1} : std::vector<int>{1}; }
  Halide::Stage tiled(Halide::Stage st, int q) const { return q > 1 ? st.specialize(ctx.extent("t") >= q) : st; }

  void keys_and_logits() const {
    using namespace Halide;
    const RDom rd = ctx.rdom("attention_scores");
    // Stored chunk by chunk (each chunk's kv_chunk x d_k keys contiguous, so
    // q.k reads one stream), filled a block of keys at a time over all of d_k
    // (the keys' rows stay in L1 while they are gathered).
    s("k_t").compute_at(out, hb).reorder_storage(kk, d, c, Var("heads"), Var("batch"));
    in(s("k_t")).specialize(ctx.attention_own_rows()).reorder(kk, d, c).vectorize(kk, lanes()); // by address
    in(s("k_t")).reorder(kk, d, c).vectorize(kk, lanes());
    // q.k one chunk and tile at a time: a (kv_chunk x q_tile) accumulator of
    // constant size, so it lives in registers across the d_k reduction; a tile
    // of more accumulators than the budget is summed in parts, each its own d_k
    // loop.
    s("logits").compute_at(out, to).hoist_storage(out, hb);
    for (const int q : heights())
      tiled(in(s("logits")), q)
          .split(t, tq, t, q, TailStrategy::RoundUp) // not below the block: q's rows are clamped above
          .reorder(kk, t, tq, c)
          .vectorize(kk, lanes());
    s("scores").compute_at(s("logits"), tq);
    in(s("scores")).vectorize(kk, lanes());
    in.update(s("scores"))
        .split(kk, kko, kk, chunk / accumulator_parts(chunk / lanes() * q_tile, registers))
        .reorder(kk, t, rd.x, kko)
        .vectorize(kk, lanes())
        .unroll(kk)
        .unroll(t)
        .unroll(kko);
    s("p").compute_at(out, to).hoist_storage(out, hb);
    in(s("p")).vectorize(kk, lanes());
  }

  // p.v of one tile height into `f`'s update: the keys `inner` (a chunk's)
  // inside the tiles, the tiles inside `outer` (the chunks); its d_k x q sums
  // in registers where d_k is a constant (`dk_value` > 0; in parts where they
  // exceed the budget).
  void value_tiles(Halide::Stage st, int q, int dk_value, const std::vector<Halide::VarOrRVar>& inner,
                   const std::vector<Halide::VarOrRVar>& outer) const {
    using namespace Halide;
    st.split(t, tq, t, q, TailStrategy::RoundUp); // a block's last tile: the lowering clamps q's rows
    std::vector<VarOrRVar> order{d, t};
    order.insert(order.end(), inner.begin(), inner.end());
    if (dk_value > 0) {
      st.split(d, dpo, d, std::max(vec, dk_value / accumulator_parts(std::max(1, dk_value / vec) * q, registers)));
      order.push_back(dpo);
    }
    order.push_back(tq);
    order.insert(order.end(), outer.begin(), outer.end());
    st.reorder(order).unroll(t);
    if (dk_value > 0)
      st.vectorize(d, vec).unroll(d).unroll(dpo);
    else
      st.vectorize(d, vec, TailStrategy::GuardWithIf);
  }

  // p.v in branches of the constant d_ks and tile heights. Where the row table
  // is the identity (own_rows: the encoder, greedy decoding, every
  // cross-attention) k and v are read by address: through the table, each
  // key's row index was loaded, clamped and turned into an address inside p.v's
  // loop, 8 scalar instructions per key beside its 4 x q_tile FMAs (Zen 5, 2
  // threads, S = 512, harness medians of 5 interleaved rounds: 2.66 -> 2.33 ms).
  void values(const Halide::Func& f, const std::vector<Halide::VarOrRVar>& inner,
              const std::vector<Halide::VarOrRVar>& outer) const {
    using namespace Halide;
    for (bool by_address : {true, false}) { // the own_rows branch first (Halide tries them in order)
      const auto branch = [&]() {
        Stage st = in.update(f);
        return by_address ? st.specialize(ctx.attention_own_rows()) : st;
      };
      for (const auto& [dk, dk_value] : fixed_dk)
        for (const int q : heights())
          value_tiles(branch().specialize(q > 1 ? dk && ctx.extent("t") >= q : dk), q, dk_value, inner, outer);
      for (const int q : heights())
        value_tiles(tiled(branch(), q), q, 0, inner, outer);
    }
  }

  // Whole rows: lane-wise max and sum over every key, then across the lanes;
  // p.v over every key into one register tile.
  void rows() const {
    using namespace Halide;
    const RDom rm = ctx.rdom("attention_rows_keys"), rl = ctx.rdom("attention_rows_lanes"),
               rj = ctx.rdom("attention_rows_out");
    for (const char* n : {"lane_max", "max", "lane_sum", "sum", "out_unnormalized"})
      s(n).compute_at(out, to);
    for (const char* n : {"lane_max", "lane_sum"}) {
      in(s(n)).vectorize(l);
      in.update(s(n)).reorder(l, rm.x, rm.y).vectorize(l);
    }
    for (const char* n : {"max", "sum"})
      in.update(s(n)).atomic().vectorize(rl.x);
    in(s("out_unnormalized")).vectorize(d, vec, TailStrategy::GuardWithIf);
    values(s("out_unnormalized"), {rj.x}, {rj.y});
  }

  // Per chunk: its max and sum (tree reductions across the chunk's lanes: max
  // is exact, the sum reassociates within the 1e-5 tolerance) and p.v, one
  // chunk at a time inside the merge over chunks.
  void chunk_merge() const {
    using namespace Halide;
    const RDom rk = ctx.rdom("attention_chunk"), rc = ctx.rdom("attention_merge");
    for (const char* n : {"chunk_max", "chunk_sum", "max", "weight", "sum", "out_unnormalized"})
      s(n).compute_at(out, to);
    in.update(s("chunk_max")).atomic().vectorize(rk.x, lanes());
    in.update(s("chunk_sum")).atomic().vectorize(rk.x, lanes());
    in(s("out_unnormalized")).vectorize(d, vec, TailStrategy::GuardWithIf);
    in.update(s("out_unnormalized")).reorder(d, t, rc.x).vectorize(d, vec, TailStrategy::GuardWithIf);
    s("chunk_out").compute_at(s("out_unnormalized"), rc.x);
    in(s("chunk_out")).vectorize(d, vec, TailStrategy::GuardWithIf);
    values(s("chunk_out"), {rk.x}, {});
  }
};

// Blocks of about q_block queries (whole rows' softmax; the per-chunk merge
// takes a tile per block): as many as q_block needs, of equal height, a
// multiple of q_tile unless the call has fewer queries than q_block, so that
// the last block, shifted inwards, recomputes few queries (t 37, q_block 32:
// two blocks of 20, not two of 32). Tiles inside a block are rounded up (the
// lowering clamps q's rows). Where a head's keys and values fit in L1 (32
// KiB, the smallest of the x86 and Arm cores seen) a block is one tile, as it
// is without blocks: blocks gain nothing there and cost their recomputed
// queries (t = tk = 37, batch 32: 1.73 -> 1.86 ms). The (condition, queries
// per block) of out's branches, the first that holds taken.
inline std::vector<std::pair<Halide::Expr, Halide::Expr>> query_blocks(const dsl::lowering& ctx, const knob_values& k) {
  using Halide::Expr;
  const int qt = k["q_tile"];
  const Expr queries = ctx.extent("t");
  std::vector<std::pair<Expr, Expr>> blocks;
  if (k["softmax_lanes"] > 0 && k["q_block"] > qt) {
    const Expr count = (queries + k["q_block"] - 1) / k["q_block"];
    blocks.emplace_back(queries >= qt && ctx.extent("tk") * ctx.extent("d_k") * 8 > 32 * 1024,
                        Halide::min(queries, ((queries + count - 1) / count + qt - 1) / qt * qt));
  }
  blocks.emplace_back(queries >= qt, qt);
  return blocks;
}

inline void attention(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                      const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  const int qt = k["q_tile"], chunk = k["kv_chunk"];
  Var d("d_k"), t("t"), h("heads"), b("batch"), to("to"), ti("ti"), hb("hb");
  // d_k == 64 (Transformer-base) and 32 (smaller models) get branches of their
  // own: with d_k a constant, the p.v accumulator (d_k x q_tile floats) has a
  // constant size and lives in registers (AVX-512, d_k 64: 4 x q_tile zmm) instead
  // of being loaded and stored every step. Measured (2 threads, AVX-512, tuned
  // kv_chunk 32 / q_tile 8, 8 heads, S = 512, d_k 64): 70 -> 130 GFLOP/s; (Zen 2,
  // d_k 32, 4 heads x 32 sentences of 24 tokens): 0.48 -> 0.40 ms.
  const std::vector<std::pair<Expr, int>> fixed_dk{{ctx.extent("d_k") == 64, 64}, {ctx.extent("d_k") == 32, 32}};
  // Decode steps first: the direct algorithm (dsl/lower_attention.hpp selects it
  // for them). With d_k a constant its q.k loads are dense vectors (no clamp of
  // the last lane block) and p.v's accumulators stay in registers. A branch of
  // tasks of decode_heads heads (attention_direct says why) where the call has
  // that many; its own tasks, so it is specialised before the directives below.
  // Each branch then tiles t.
  const Expr decode = ctx.attention_takes_direct();
  const int heads_per_task = k["decode_heads"];
  // One query per tile, in branches of the constant d_ks, under `condition`
  // (undefined: the stage is already a decode step's branch).
  auto decode_queries = [&](Stage s, const Expr& condition) {
    for (const auto& [dk, dk_value] : fixed_dk)
      s.specialize(condition.defined() ? condition && dk : dk).split(t, to, ti, 1);
    (condition.defined() ? s.specialize(condition) : s).split(t, to, ti, 1);
  };
  if (k["decode_lanes"] > 0 && heads_per_task > 1) {
    Var hi("hi");
    Stage grouped = in(out).specialize(decode && ctx.extent("heads") >= heads_per_task);
    grouped.split(h, h, hi, task_heads(ctx, heads_per_task), TailStrategy::ShiftInwards)
        .reorder(d, t, hi, h, b)
        .fuse(h, b, hb)
        .parallel(hb)
        .vectorize(d, vec, TailStrategy::GuardWithIf);
    decode_queries(grouped, Expr());
  }
  in(out).fuse(h, b, hb).parallel(hb).vectorize(d, vec, TailStrategy::GuardWithIf);
  if (k["decode_lanes"] > 0) {
    decode_queries(in(out), decode);
    attention_direct(ctx, out, vec, fixed_dk, target, k, in);
  }
  const auto blocks = query_blocks(ctx, k);
  for (const auto& [dk, dk_value] : fixed_dk)
    for (const auto& [condition, height] : blocks)
      in(out).specialize(dk && condition).split(t, to, ti, height, TailStrategy::ShiftInwards);
  for (const auto& [condition, height] : blocks)
    in(out).specialize(condition).split(t, to, ti, height, TailStrategy::ShiftInwards);
  in(out).split(t, to, ti, 1);

  const chunked_attention chunked{ctx, out, vec, vector_registers(target), chunk, qt, fixed_dk, in};
  chunked.keys_and_logits();
  if (k["softmax_lanes"] > 0)
    chunked.rows();
  else
    chunked.chunk_merge();
}

} // namespace halformer::schedules::cpu
