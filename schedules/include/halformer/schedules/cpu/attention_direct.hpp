// CPU schedule of attention's decode steps: the direct algorithm
// (dsl/lower_attention.hpp attention_direct; cpu/attention.hpp chooses it).
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"
#include "halformer/schedules/cpu/registers.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace halformer::schedules::cpu {

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

} // namespace halformer::schedules::cpu
