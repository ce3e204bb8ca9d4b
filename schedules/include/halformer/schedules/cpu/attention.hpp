// CPU schedule of attention (see dsl/lower_attention.hpp for the algorithms).
//
// Parallel over (head, batch row). Calls of several queries take the chunked
// algorithm: per head the keys are transposed once into k_t (key index innermost,
// so q.k vectorises across keys). Queries are processed `q_tile` at a time: for one
// tile the logits of every chunk, then (softmax_lanes > 0, the hand defaults) the
// softmax over the whole rows and p.v over every key, or each chunk's softmax
// and p.v, merged; so the largest temporary is q_tile x Tk floats, never
// Tq x Tk (q_tile 4, Tk 2048: 32 KiB, in L1/L2), its allocation hoisted to the
// task. Register budget of q.k: kv_chunk / lanes x q_tile accumulators, of p.v:
// d_k / lanes x q_tile, each summed in parts of at most half the registers
// (accumulator_parts; AVX-512: 64/16 x 4 = 16 zmm; AVX2 at q_tile 2: 32/8 x 2 =
// 8 ymm, p.v's 8 x 2 in two parts). Decode steps
// (dsl::lowering::attention_takes_direct) take the direct algorithm
// (attention_direct below) unless decode_lanes is 0.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
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

// Decode steps, every stage per task of up to `decode_heads` heads of one row.
// Scores 4 keys at a time, each key a vector of decode_lanes partial sums across
// d_k (AVX2, d_k 64: 8 FMAs per key into one ymm, 4 keys in flight to cover the
// FMA latency), then one horizontal sum per key. Max and sum of the
// exponentials reduce decode_lanes keys per vector, and p.v keeps its d_k
// accumulators in registers when d_k is a constant (`fixed_dk`; d_k 64 on AVX2:
// 8 ymm, with p broadcast and V streamed once).
// Where the row table is the identity (own_rows: greedy decoding, every
// cross-attention), k and v are read by address and the task's heads one after
// another, all of a head's keys (then all of its values) before the next head's:
// a row's heads lie one after another in k and v, so a task reads one
// sequential stream of keys and one of values, which the hardware prefetchers
// follow at the memory's rate. Heads taking turns every 4 keys (or p.v over 4
// heads at once) read 8 (4) streams side by side: 18 GB/s a core where one
// stream reads 29-35 (Zen 5, one thread, 128 KiB tasks from memory, the pattern
// alone). Software prefetch of the keys ahead gained nothing over this order.
// Zen 5, 2 threads, d_k 64, 8 heads, tk 128, harness medians of 5 interleaved
// rounds, heads taking turns through the table (and float16 keys with
// attention's 16 partial sums) -> by address in turn: float32 keys batch 1 / 8 /
// 32 0.0148 / 0.106 / 0.46 -> 0.0130 / 0.096 / 0.42 ms; float16 keys 0.0126 /
// 0.083 / 0.33 -> 0.0083 / 0.049 / 0.19; a source's 4 beams, 8 sources: float32
// 0.156 -> 0.141, float16 0.117 -> 0.099. The AVX2 code likewise (float16 at
// batch 8 0.076 -> 0.050).
// Through any other table (a beam search's caches) each key's row is looked up
// once for all of a task's heads, which take turns every 4 keys (p.v: as many
// heads at once as half the registers hold).
// Several heads per task: a head's keys are a short stream (tk x d_k: 16 KiB
// at tk 128 in float16), so one head per task starts a stream per head (Zen 5,
// batch 8, tk 128, 1 -> 8 heads per task: 0.112 -> 0.085 ms). But every core
// needs a task: a call of fewer rows than cores takes fewer heads per task
// (batch 1, 8 heads, 2 cores: two tasks of 4, float16 0.0106 -> 0.0073 ms).
// A row of several queries (a source's beams in beam search's cross-attention)
// takes them several at a time: q.k of 4 keys x as many queries as half the
// registers hold (AVX-512 4: 16 zmm of partial sums, each key vector loaded once
// for 4 queries; AVX2 2: 8 ymm), and p.v of as many queries as half the registers
// hold (AVX-512, d_k 64: 4 queries of one head; AVX2: one). Each query's sums
// keep their order, so a beam gets the bits of a one-query step. The last tile
// is rounded up (the lowering clamps q's rows). The register budget sets the
// tile, not a knob: such calls are in the prefill bucket (t > 1), whose tuned
// shape (the encoder's) never takes this branch. Zen 5, 2 threads, beam 4, d_k
// 64, 8 heads, tk 128, harness medians of 5 interleaved rounds, one query at a
// time -> 4: 2 sources 0.0548 -> 0.0445 ms, 8 sources 0.216 -> 0.162 (2
// queries: 0.183); AVX2 code, 2 queries: 8 sources 0.223 -> 0.176. One query
// per row is unchanged (batch 8, tk 128: 0.117 ms).
// The direct algorithm's stages (attention_direct says why), each branch for a
// table that is the identity (`own_rows`: k and v read by address) and one for
// any table. By address a task reads its heads in turn: all of a head's keys,
// then the next head's. Through the table, every key's row is looked up once for
// all of the task's heads, so they take turns every 4 keys (and p.v takes as many
// heads at once as half the registers hold: AVX-512, d_k 64, 4 of 4 zmm).
struct direct_attention {
  const dsl::lowering& ctx;
  const bucket_scope& in;
  int vec, registers, heads; // heads: the most per task (decode_heads)
  Halide::Var d{"d_k"}, key{"key"}, l{"lane"}, ko{"ko"}, ki{"ki"}, h{"heads"}, ho{"ho"}, hi{"hi"}, t{"t"}, tqo{"tqo"},
      tqi{"tqi"};
  Halide::Func stage(const char* n) const { return ctx.stage(std::string("attention_direct_") + n); }
  int queries() const { return registers / 8; } // 4 keys x queries of q.k partial sums in half the registers
  Halide::Expr tiled() const { return ctx.extent("t") >= queries(); }

  // Scores of `q` queries at a time: 4 keys x q queries of partial sums.
  void score_tiles(Halide::Stage st, int q, bool by_address) const {
    using namespace Halide;
    const RDom rl = ctx.rdom("attention_direct_lanes");
    st.split(key, ko, ki, 4, TailStrategy::RoundUp);
    std::vector<VarOrRVar> order{rl.x, ki};
    if (q > 1) {
      st.split(t, tqo, tqi, q, TailStrategy::RoundUp).unroll(tqi);
      order.push_back(tqi);
    }
    if (by_address) {
      order.insert(order.end(), {ko, h});
    } else {
      st.split(h, ho, hi, heads, TailStrategy::GuardWithIf);
      order.insert(order.end(), {hi, ko, ho});
    }
    if (q > 1)
      order.push_back(tqo);
    st.reorder(order).atomic().vectorize(rl.x).unroll(ki);
  }
  void scores(Halide::Stage st, bool by_address) const {
    if (queries() > 1)
      score_tiles(st.specialize(tiled()), queries(), by_address);
    score_tiles(st, 1, by_address);
  }
  void partial_sums(Halide::Stage st) const {
    const Halide::RDom rb = ctx.rdom("attention_direct_partial");
    if (queries() > 1)
      st.specialize(tiled()).reorder(l, key, t, rb.x).vectorize(l).unroll(key).unroll(t);
    st.reorder(l, key, rb.x).vectorize(l).unroll(key);
  }
  // p.v, its d_k accumulators in registers where d_k is a constant.
  void values(Halide::Stage st, const std::vector<std::pair<Halide::Expr, int>>& fixed_dk, bool by_address) const {
    using namespace Halide;
    const RDom rj = ctx.rdom("attention_direct_out");
    for (const auto& [dk, dk_value] : fixed_dk) {
      // Query tiles: the most queries of a tile half the registers hold, then heads.
      const int budget = std::max(1, registers / 2 / (dk_value / vec)), q = std::min(queries(), budget);
      if (q > 1)
        st.specialize(dk && tiled())
            .split(h, ho, hi, std::clamp(budget / q, 1, heads), TailStrategy::GuardWithIf)
            .split(t, tqo, tqi, q, TailStrategy::RoundUp)
            .reorder(d, tqi, hi, rj.x, ho, tqo)
            .vectorize(d, vec)
            .unroll(d)
            .unroll(tqi)
            .unroll(hi);
      const int together = by_address ? 1 : std::clamp(budget, 1, heads);
      st.specialize(dk)
          .split(h, ho, hi, together, TailStrategy::GuardWithIf)
          .reorder(d, hi, rj.x, ho)
          .vectorize(d, vec)
          .unroll(d)
          .unroll(hi);
    }
    st.reorder(d, rj.x).vectorize(d, vec, TailStrategy::GuardWithIf);
  }
};

inline void attention_direct(const dsl::lowering& ctx, Halide::Func out, int vec,
                             const std::vector<std::pair<Halide::Expr, int>>& fixed_dk, const Halide::Target& target,
                             const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const direct_attention a{ctx, in, vec, vector_registers(target), k["decode_heads"]};
  const RDom rl = ctx.rdom("attention_direct_lanes"), rk = ctx.rdom("attention_direct_keys");
  const Expr own = ctx.attention_own_rows();
  for (const char* n : {"scores", "lane_max", "max", "p", "lane_sum", "sum", "out"})
    a.stage(n).compute_at(out, Var("hb"));
  in(a.stage("scores")).vectorize(a.key, vec, TailStrategy::RoundUp);
  for (bool by_address : {true, false}) { // the own_rows branches first (Halide tries them in order)
    const auto branch = [&](Stage st) { return by_address ? st.specialize(own) : st; };
    a.scores(branch(in.update(a.stage("scores"))), by_address);
    a.partial_sums(branch(in.update(a.stage("partial"))));
    a.values(branch(in.update(a.stage("out"))), fixed_dk, by_address);
  }
  a.stage("partial").compute_at(a.stage("scores"), a.ko);
  in(a.stage("partial")).vectorize(a.l);
  in(a.stage("p")).vectorize(a.key, vec, TailStrategy::RoundUp);
  for (const char* n : {"lane_max", "lane_sum"}) {
    in(a.stage(n)).vectorize(a.l);
    in.update(a.stage(n)).reorder(a.l, rk.x).vectorize(a.l);
  }
  for (const char* n : {"max", "sum"})
    in.update(a.stage(n)).atomic().vectorize(rl.x);
  in(a.stage("out")).vectorize(a.d, vec, TailStrategy::GuardWithIf);
}

// A decode task's heads: `most`, or fewer where the call's rows would leave a
// core without a task (the host's cores, from Halide's runtime; attention_direct
// says why).
inline Halide::Expr task_heads(const dsl::lowering& ctx, int most) {
  using namespace Halide;
  return clamp(ctx.extent("heads") * ctx.extent("batch") / host_cores(), 1, most);
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

// The chunked algorithm's stages inside each query tile of `out` (its loops
// `hb` and `to`): the keys transposed per head, q.k of every chunk, then either
// the softmax over whole rows (`softmax_lanes` > 0) or each chunk's softmax and
// p.v, merged.
struct chunked_attention {
  const dsl::lowering& ctx;
  Halide::Func out;
  int vec, registers, chunk, q_tile;
  const std::vector<std::pair<Halide::Expr, int>>& fixed_dk;
  const bucket_scope& in;
  Halide::Var d{"d_k"}, t{"t"}, kk{"kk"}, c{"c"}, hb{"hb"}, to{"to"}, kko{"kko"}, dpo{"dpo"}, l{"lane"};
  Halide::Func s(const char* n) const { return ctx.stage(std::string("attention_") + n); }
  int lanes() const { return std::min(vec, chunk); }

  void keys_and_logits() const {
    using namespace Halide;
    const RDom rd = ctx.rdom("attention_scores");
    // Stored chunk by chunk (each chunk's kv_chunk x d_k keys contiguous, so
    // q.k reads one stream), filled a block of keys at a time over all of d_k
    // (the keys' rows stay in L1 while they are gathered).
    s("k_t").compute_at(out, hb).reorder_storage(kk, d, c, Var("heads"), Var("batch"));
    in(s("k_t")).specialize(ctx.attention_own_rows()).reorder(kk, d, c).vectorize(kk, lanes()); // by address
    in(s("k_t")).reorder(kk, d, c).vectorize(kk, lanes());
    // q.k one chunk at a time: a (kv_chunk x q_tile) accumulator of constant
    // size, so it lives in registers across the d_k reduction; a tile of more
    // accumulators than the budget is summed in parts, each its own d_k loop.
    s("logits").compute_at(out, to).hoist_storage(out, hb);
    in(s("logits")).reorder(kk, t, c).vectorize(kk, lanes());
    s("scores").compute_at(s("logits"), c);
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

  // p.v into `f`'s update over the keys `keys` (innermost first), its d_k x
  // q_tile sums in registers where d_k is a constant (in parts where they
  // exceed the budget). Where the row table is the identity (own_rows: the
  // encoder, greedy decoding, every cross-attention) k and v are read by
  // address: through the table, each key's row index was loaded, clamped and
  // turned into an address inside p.v's loop, 8 scalar instructions per key
  // beside its 4 x q_tile FMAs (Zen 5, 2 threads, S = 512, harness medians of
  // 5 interleaved rounds: 2.66 -> 2.33 ms).
  void values(const Halide::Func& f, const std::vector<Halide::VarOrRVar>& keys) const {
    using namespace Halide;
    for (bool by_address : {true, false}) { // the own_rows branch first (Halide tries them in order)
      const auto branch = [&](Stage st) { return by_address ? st.specialize(ctx.attention_own_rows()) : st; };
      for (const auto& [dk, dk_value] : fixed_dk) {
        std::vector<VarOrRVar> order{d, t};
        order.insert(order.end(), keys.begin(), keys.end());
        order.push_back(dpo);
        branch(in.update(f))
            .specialize(dk)
            .split(d, dpo, d,
                   std::max(vec, dk_value / accumulator_parts(std::max(1, dk_value / vec) * q_tile, registers)))
            .reorder(order)
            .vectorize(d, vec)
            .unroll(d)
            .unroll(t)
            .unroll(dpo);
      }
      std::vector<VarOrRVar> order{d, t};
      order.insert(order.end(), keys.begin(), keys.end());
      branch(in.update(f)).reorder(order).vectorize(d, vec, TailStrategy::GuardWithIf).unroll(t);
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
    values(s("out_unnormalized"), {rj.x, rj.y});
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
    values(s("chunk_out"), {rk.x});
  }
};

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
  for (const auto& [dk, dk_value] : fixed_dk)
    in(out).specialize(dk && ctx.extent("t") >= qt).split(t, to, ti, qt, TailStrategy::ShiftInwards);
  in(out).specialize(ctx.extent("t") >= qt).split(t, to, ti, qt, TailStrategy::ShiftInwards);
  in(out).split(t, to, ti, 1);

  const chunked_attention chunked{ctx, out, vec, vector_registers(target), chunk, qt, fixed_dk, in};
  chunked.keys_and_logits();
  if (k["softmax_lanes"] > 0)
    chunked.rows();
  else
    chunked.chunk_merge();
}

} // namespace halformer::schedules::cpu
