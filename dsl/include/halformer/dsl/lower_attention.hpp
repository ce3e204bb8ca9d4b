// Attention's lowering: part of dsl::lowering (lower.hpp includes this file).
//
// Algorithms of one result, chosen by the call's shape and the options:
// - Several queries (prefill): the logits of key chunks, q.k over the keys
//   transposed once per head (k_t, key index innermost) so that it vectorises
//   across keys; many queries share that copy. Then either
//   - (options["softmax_lanes"] > 0, attention_rows) the softmax over whole rows:
//     the row's max, exponentials and sum, and p.v over every key; or
//   - FlashAttention's algebra without loop-carried state: per (query, chunk)
//     the chunk's max, sum of exponentials and partial output, then the chunks
//     merged with weights exp(chunk_max - max) (the GPU schedules').
//   No stage is Tq x Tk per head unless a schedule computes it so.
// - A decode step's queries or one query (lowering::attention_takes_direct), when
//   options["decode_lanes"] > 0: the keys are read as stored (d_k innermost). Per
//   key, `decode_lanes` partial sums of q.k across d_k, then their sum. With one
//   query (or a source's few beams) the transposition would cost as much as the
//   scores, for keys read once per step (a cache, or the encoder memory's).
// All share the masks (lowering::valid) and define a row with no valid key as zeros,
// and all read key j of query row b from k/v row kv_rows(j, b), clamped into k's
// rows (a bad table reads a wrong row, never outside the buffer).
#pragma once

#include "halformer/dsl/exp.hpp"

namespace halformer::dsl {

struct lowering::attention_operands {
  lowered q, k, v, kv_rows, lengths;
  Halide::Expr causal, offset, kv_row_count, own_rows;
  // The k/v row holding key j (< tk) of query row b: b itself where the table is
  // the identity (a branch specialised on own_rows reads k and v by address).
  Halide::Expr row(const Halide::Expr& j, const Halide::Expr& b) const {
    return Halide::select(own_rows, Halide::min(b, kv_row_count - 1),
                          Halide::clamp(kv_rows.f(j, b), 0, kv_row_count - 1));
  }
  // Feature d of head h of key j of query row b: k's and v's entries, float32
  // (float16 ones widened where they are read).
  Halide::Expr key(const Halide::Expr& d, const Halide::Expr& j, const Halide::Expr& h, const Halide::Expr& b) const {
    return Halide::cast<float>(k.f(d, j, h, row(j, b)));
  }
  Halide::Expr value(const Halide::Expr& d, const Halide::Expr& j, const Halide::Expr& h, const Halide::Expr& b) const {
    return Halide::cast<float>(v.f(d, j, h, row(j, b)));
  }
};

template <class Args> void lowering::build(const op::attention& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const attention_operands at{a[0],
                              a[1],
                              a[2],
                              a[3],
                              a[4],
                              Halide::cast<int>(scalar_of(a[5])),
                              scalar_of(a[6]),
                              extent("kv_row"),
                              Halide::cast<bool>(scalar_of(a[8]))};
  Halide::Var d("d_k"), t("t"), h("heads"), b("batch");
  attention_decode_step_ = Halide::cast<bool>(scalar_of(a[7]));
  attention_own_rows_ = at.own_rows;
  Halide::Expr value = attention_chunked(o.name, at);
  if (const int lanes = options.count("decode_lanes") ? options.at("decode_lanes") : 0; lanes > 0)
    value = Halide::select(attention_takes_direct(), attention_direct(o.name, at, lanes), value);
  r.f(d, t, h, b) = value;
}

// Key kk of chunk c (`chunk` keys each), its index clamped into the keys (the
// last chunk's keys past tk read the last key), and whether query t of row b
// attends to it.
struct lowering::chunk_keys {
  const lowering& ctx;
  const attention_operands& at;
  int chunk;
  Halide::Expr key(const Halide::Expr& kk, const Halide::Expr& c) const { return c * chunk + kk; }
  Halide::Expr clamped(const Halide::Expr& kk, const Halide::Expr& c) const {
    return Halide::min(key(kk, c), ctx.extent("tk") - 1);
  }
  Halide::Expr chunks() const { return (ctx.extent("tk") + chunk - 1) / chunk; }
  Halide::Expr ok(const Halide::Expr& kk, const Halide::Expr& c) const {
    Halide::Var t("t"), b("batch");
    const Halide::Expr tk = ctx.extent("tk");
    return ctx.valid(key(kk, c), t, Halide::min(at.lengths.f(b), tk), at.causal, at.offset);
  }
};

// The scaled, masked logits of every chunk, (kk, c, t, h, b): q.k over the keys
// transposed once per head (k_t), masked keys at masked_logit.
inline Halide::Func lowering::chunk_logits(const std::string& n, const chunk_keys& keys) {
  const attention_operands& at = keys.at;
  Halide::Var d("d_k"), t("t"), h("heads"), b("batch"), kk("kk"), c("c");
  const Halide::Expr dk = extent("d_k"), scale = 1.0f / Halide::sqrt(Halide::cast<float>(dk));
  Halide::Func k_t = new_stage(n + "_k_t"), scores = new_stage(n + "_scores"), logits = new_stage(n + "_logits");
  k_t(kk, c, d, h, b) = at.key(d, keys.clamped(kk, c), h, b);
  Halide::RDom rd(0, dk, n + "_rd");
  scores(kk, c, t, h, b) = 0.0f;
  // Query rows past t read the last one: a schedule may compute whole tiles of
  // queries, rounded up.
  scores(kk, c, t, h, b) += at.q.f(rd, Halide::min(t, extent("t") - 1), h, b) * k_t(kk, c, rd, h, b);
  logits(kk, c, t, h, b) = Halide::select(keys.ok(kk, c), scores(kk, c, t, h, b) * scale, masked_logit);
  rdoms_[n + "_scores"] = rd;
  return logits;
}

inline Halide::Expr lowering::attention_chunked(const std::string& n, const attention_operands& at) {
  const chunk_keys keys{*this, at, options.count("kv_chunk") ? options.at("kv_chunk") : 64};
  if (const int lanes = options.count("softmax_lanes") ? options.at("softmax_lanes") : 0; lanes > 0)
    return attention_rows(n, keys, lanes);
  const int chunk = keys.chunk;
  Halide::Var d("d_k"), t("t"), h("heads"), b("batch"), kk("kk"), c("c");
  Halide::Func logits = chunk_logits(n, keys), chunk_max = new_stage(n + "_chunk_max"), p = new_stage(n + "_p"),
               chunk_sum = new_stage(n + "_chunk_sum"), chunk_out = new_stage(n + "_chunk_out"),
               row_max = new_stage(n + "_max"), weight = new_stage(n + "_weight"), row_sum = new_stage(n + "_sum"),
               row_out = new_stage(n + "_out_unnormalized");
  Halide::RDom rk(0, chunk, n + "_rk");
  chunk_max(c, t, h, b) = masked_logit;
  chunk_max(c, t, h, b) = Halide::max(chunk_max(c, t, h, b), logits(rk, c, t, h, b));
  p(kk, c, t, h, b) =
      Halide::select(keys.ok(kk, c), exp_of_nonpositive(logits(kk, c, t, h, b) - chunk_max(c, t, h, b)), 0.0f);
  chunk_sum(c, t, h, b) = 0.0f;
  chunk_sum(c, t, h, b) += p(rk, c, t, h, b);
  chunk_out(d, c, t, h, b) = 0.0f;
  chunk_out(d, c, t, h, b) += p(rk, c, t, h, b) * at.value(d, keys.clamped(rk, c), h, b);
  Halide::RDom rc(0, keys.chunks(), n + "_rc");
  row_max(t, h, b) = masked_logit;
  row_max(t, h, b) = Halide::max(row_max(t, h, b), chunk_max(rc, t, h, b));
  weight(c, t, h, b) = exp_of_nonpositive(chunk_max(c, t, h, b) - row_max(t, h, b));
  row_sum(t, h, b) = 0.0f;
  row_sum(t, h, b) += weight(rc, t, h, b) * chunk_sum(rc, t, h, b);
  row_out(d, t, h, b) = 0.0f;
  row_out(d, t, h, b) += weight(rc, t, h, b) * chunk_out(d, rc, t, h, b);
  rdoms_[n + "_chunk"] = rk;
  rdoms_[n + "_merge"] = rc;
  return Halide::select(row_sum(t, h, b) > 0.0f, row_out(d, t, h, b) / row_sum(t, h, b), 0.0f);
}

// The softmax over whole rows of the chunks' logits (options["softmax_lanes"]
// > 0): the row's max, exponentials, sum and p.v over every key, no
// per-chunk statistics or merge. For a schedule that keeps a query tile's
// logits (q_tile x Tk floats) anyway, as the CPU's does: the chunk maxima,
// weights and merge were a sixth of the kernel (perf, Zen 5, S = 512). Max and
// sum: lane l reduces keys l, l + lanes, ... of every chunk (whole vectors, no
// horizontal step per vector), then the lanes are reduced.
inline Halide::Expr lowering::attention_rows(const std::string& n, const chunk_keys& keys, int lanes) {
  if (keys.chunk % lanes != 0)
    throw std::invalid_argument("attention: kv_chunk " + std::to_string(keys.chunk) +
                                " is not a multiple of softmax_lanes " + std::to_string(lanes));
  Halide::Var d("d_k"), t("t"), h("heads"), b("batch"), kk("kk"), c("c"), l("lane");
  Halide::Func logits = chunk_logits(n, keys), lane_max = new_stage(n + "_lane_max"), row_max = new_stage(n + "_max"),
               p = new_stage(n + "_p"), lane_sum = new_stage(n + "_lane_sum"), row_sum = new_stage(n + "_sum"),
               row_out = new_stage(n + "_out_unnormalized");
  Halide::RDom rm(0, keys.chunk / lanes, 0, keys.chunks(), n + "_rm"), rl(0, lanes, n + "_rl"),
      rj(0, keys.chunk, 0, keys.chunks(), n + "_rj");
  lane_max(l, t, h, b) = masked_logit;
  lane_max(l, t, h, b) = Halide::max(lane_max(l, t, h, b), logits(l + lanes * rm.x, rm.y, t, h, b));
  row_max(t, h, b) = masked_logit;
  row_max(t, h, b) = Halide::max(row_max(t, h, b), lane_max(rl, t, h, b));
  p(kk, c, t, h, b) =
      Halide::select(keys.ok(kk, c), exp_of_nonpositive(logits(kk, c, t, h, b) - row_max(t, h, b)), 0.0f);
  lane_sum(l, t, h, b) = 0.0f;
  lane_sum(l, t, h, b) += p(l + lanes * rm.x, rm.y, t, h, b);
  row_sum(t, h, b) = 0.0f;
  row_sum(t, h, b) += lane_sum(rl, t, h, b);
  row_out(d, t, h, b) = 0.0f;
  row_out(d, t, h, b) += p(rj.x, rj.y, t, h, b) * keys.at.value(d, keys.clamped(rj.x, rj.y), h, b);
  rdoms_[n + "_rows_keys"] = rm;
  rdoms_[n + "_rows_lanes"] = rl;
  rdoms_[n + "_rows_out"] = rj;
  return Halide::select(row_sum(t, h, b) > 0.0f, row_out(d, t, h, b) / row_sum(t, h, b), 0.0f);
}

// Keys past tk (a schedule may compute scores for whole blocks of keys) read the
// last key and are masked.
inline Halide::Expr lowering::attention_direct(const std::string& n, const attention_operands& at, int lanes) {
  Halide::Var d("d_k"), t("t"), h("heads"), b("batch"), key("key"), l("lane");
  Halide::Expr dk = extent("d_k"), tk = extent("tk");
  Halide::Expr scale = 1.0f / Halide::sqrt(Halide::cast<float>(dk));
  Halide::Func partial = new_stage(n + "_direct_partial"), scores = new_stage(n + "_direct_scores"),
               lane_max = new_stage(n + "_direct_lane_max"), row_max = new_stage(n + "_direct_max"),
               p = new_stage(n + "_direct_p"), lane_sum = new_stage(n + "_direct_lane_sum"),
               row_sum = new_stage(n + "_direct_sum"), row_out = new_stage(n + "_direct_out");
  // q.k: lane l sums d = l, l + lanes, l + 2 lanes, ... (the blocks of `lanes`
  // entries that d_k holds whole; the rest, if any, starts the sums), then the
  // lanes are summed.
  // Query rows past t read the last one: a schedule may score whole tiles of a
  // row's queries (a source's beams), rounded up.
  Halide::RDom rb(0, dk / lanes, n + "_direct_rb");
  Halide::Expr rest = dk / lanes * lanes + l, rest_c = Halide::min(rest, dk - 1), key_c = Halide::min(key, tk - 1);
  Halide::Expr t_c = Halide::min(t, extent("t") - 1);
  partial(l, key, t, h, b) = Halide::select(rest < dk, at.q.f(rest_c, t_c, h, b) * at.key(rest_c, key_c, h, b), 0.0f);
  partial(l, key, t, h, b) += at.q.f(l + lanes * rb.x, t_c, h, b) * at.key(l + lanes * rb.x, key_c, h, b);
  Halide::RDom rl(0, lanes, n + "_direct_rl");
  scores(key, t, h, b) = 0.0f;
  scores(key, t, h, b) += partial(rl, key, t, h, b);
  // Max and sum likewise: lane l reduces keys l, l + lanes, ... (past tk: masked).
  const auto attended = [&](Halide::Expr k_) {
    return valid(k_, t, Halide::min(at.lengths.f(b), tk), at.causal, at.offset);
  };
  const auto logit = [&](Halide::Expr k_) {
    return Halide::select(attended(k_), scores(k_, t, h, b) * scale, masked_logit);
  };
  Halide::RDom rk(0, (tk + lanes - 1) / lanes, n + "_direct_rk");
  lane_max(l, t, h, b) = masked_logit;
  lane_max(l, t, h, b) = Halide::max(lane_max(l, t, h, b), logit(l + lanes * rk.x));
  row_max(t, h, b) = masked_logit;
  row_max(t, h, b) = Halide::max(row_max(t, h, b), lane_max(rl, t, h, b));
  p(key, t, h, b) = Halide::select(attended(key), exp_of_nonpositive(logit(key) - row_max(t, h, b)), 0.0f);
  lane_sum(l, t, h, b) = 0.0f;
  lane_sum(l, t, h, b) += p(l + lanes * rk.x, t, h, b);
  row_sum(t, h, b) = 0.0f;
  row_sum(t, h, b) += lane_sum(rl, t, h, b);
  Halide::RDom rj(0, tk, n + "_direct_rj");
  row_out(d, t, h, b) = 0.0f;
  row_out(d, t, h, b) += p(rj, t, h, b) * at.value(d, rj, h, b);
  rdoms_[n + "_direct_partial"] = rb;
  rdoms_[n + "_direct_lanes"] = rl;
  rdoms_[n + "_direct_keys"] = rk;
  rdoms_[n + "_direct_out"] = rj;
  return Halide::select(row_sum(t, h, b) > 0.0f, row_out(d, t, h, b) / row_sum(t, h, b), 0.0f);
}

} // namespace halformer::dsl
