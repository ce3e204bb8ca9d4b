// Lowering of random sampling (expr_sampling.hpp), every stage per row of logits:
//   <name>_allowed   the row's logits, the penalty applied to the listed tokens,
//                    the banned ones at banned_logit (two scatter updates of the copy);
//   <name>_top       the largest allowed logit;
//   <name>_keys / _weights: each entry's key and its weight exp((logit - top) / T);
//   <name>_topk_<i>  the top-k threshold's search (count of keys >= a mid key),
//   <name>_topk_gt / _eq / _mass: the keys above it, at it, and their weight;
//   <name>_topp_<i>  the top-p threshold's search (weight of keys >= a mid key),
//   <name>_topp_gt / _eq;
//   <name>_chunk_mass / _chunk_ties: each chunk's kept weight above the final
//                    threshold and its entries at it; <name>_scan the chunks'
//                    running sums; <name>_first / _last the chunk holding the
//                    draw; <name>_walk the entries of that chunk.
// Keys are the logits' order as int32 (key_of), so each threshold is found
// exactly by 32 halvings of the key range, each one vector reduction over the
// row: no sort and no per-row data-dependent loop but two short walks (a row's
// chunks, then one chunk). A search whose option is off (top_k 0, top_p 1) sums
// over an empty range. Ties at a threshold keep their lowest ids, as the
// reference's order (logit descending, id ascending).
#pragma once

#include "halformer/dsl/exp.hpp"
#include "halformer/dsl/lower.hpp"

#include <limits>

namespace halformer::dsl {

namespace sampling {
inline constexpr int chunk = 64;        // entries per chunk of the inverse CDF's first level
inline constexpr int search_steps = 32; // halvings of the int32 key range
// A banned entry's logit: finite, since Halide's code assumes no infinities (a
// comparison with -inf folded to true: a row of banned tokens sampled them all).
inline constexpr float banned_logit = std::numeric_limits<float>::lowest();
// A float's order as an int32's (non-NaN floats; -0 as +0); value_of inverts it.
inline Halide::Expr key_of(const Halide::Expr& f) {
  const Halide::Expr b = Halide::reinterpret<int32_t>(Halide::select(f == 0.0f, 0.0f, f));
  return Halide::select(b < 0, b ^ 0x7fffffff, b);
}
inline Halide::Expr value_of(const Halide::Expr& key) {
  return Halide::reinterpret<float>(Halide::select(key < 0, key ^ 0x7fffffff, key));
}
// The stages of sample_token `name` that sum over a row's vocabulary (each
// with a reduction domain of its own name), for schedules.
inline std::vector<std::string> row_sums(const std::string& name) {
  std::vector<std::string> sums;
  for (const char* s : {"_top", "_topk_gt", "_topk_eq", "_topk_mass", "_topp_gt", "_topp_eq"})
    sums.push_back(name + s);
  for (int i = 0; i < search_steps; ++i)
    for (const char* search : {"_topk_", "_topp_"})
      sums.push_back(name + search + std::to_string(i));
  return sums;
}
// CTranslate2's and transformers' repetition penalty of one logit.
inline Halide::Expr penalized(const Halide::Expr& x, const Halide::Expr& penalty) {
  return Halide::select(x > 0.0f, x / penalty, x * penalty);
}
} // namespace sampling

// One row's view of the allowed logits (the row Vars are the result's): each
// entry's key and weight are computed once per row (<name>_keys, _weights), so
// the searches' passes only load, compare and add.
struct lowering::sampling_row {
  std::vector<Halide::Var> rows;
  Halide::Expr vocab, temperature;
  Halide::Func allowed, top, keys, weights;
  std::vector<Halide::Expr> at(const Halide::Expr& v) const {
    std::vector<Halide::Expr> a{v};
    a.insert(a.end(), rows.begin(), rows.end());
    return a;
  }
  Halide::Expr row() const { return top(std::vector<Halide::Expr>(rows.begin(), rows.end())); }
  Halide::Expr logit(const Halide::Expr& v) const { return allowed(at(v)); }
  Halide::Expr ok(const Halide::Expr& v) const { return logit(v) > sampling::banned_logit; }
  // Banned entries take the lowest key, which no threshold search reaches.
  Halide::Expr key(const Halide::Expr& v) const { return keys(at(v)); }
  Halide::Expr weight_at(const Halide::Expr& logit) const { return exp_of_nonpositive((logit - row()) / temperature); }
  Halide::Expr weight(const Halide::Expr& v) const { return weights(at(v)); }
  void define_keys_and_weights(const Halide::Var& v) {
    keys(at(v)) = Halide::select(ok(v), sampling::key_of(logit(v)), std::numeric_limits<int32_t>::min());
    weights(at(v)) = Halide::select(ok(v), weight_at(logit(v)), 0.0f);
  }
};

inline Halide::Func lowering::sampling_sum(const sampling_row& s, const std::string& stage, const Halide::Expr& extent,
                                           const sampling_term& term) {
  Halide::RDom rv(0, extent, stage + "_r");
  Halide::Func f = new_stage(stage);
  f(s.rows) = Halide::cast(term(0).type(), 0);
  f(s.rows) += term(rv.x);
  rdoms_[stage] = rv;
  return f;
}

// The largest key in [lo, hi] whose `reach` (the sum of `term` over the entries
// with keys >= it) is >= target, or lo when `active` is false; reach is monotone
// and, where active, holds at lo.
inline Halide::Expr lowering::sampling_search(const sampling_row& s, const std::string& name,
                                              const Halide::Expr& active, Halide::Expr lo, Halide::Expr hi,
                                              const Halide::Expr& target, const sampling_term& term) {
  using namespace Halide;
  for (int i = 0; i < sampling::search_steps; ++i) {
    // A stage of its own: the reduction's loop then loads it, not recomputes it.
    Func at = new_stage(name + "_mid_" + std::to_string(i));
    at(s.rows) = lo + cast<int>((cast<int64_t>(hi) - lo + 1) / 2);
    const Expr mid = at(s.rows);
    Func reach = sampling_sum(s, name + "_" + std::to_string(i), select(active, s.vocab, 0),
                              [&](const Expr& v) { return select(s.key(v) >= mid, term(v), cast(term(v).type(), 0)); });
    Func bound = new_stage(name + "_bound_" + std::to_string(i));
    bound(s.rows) = select(active && lo < hi && reach(s.rows) >= target, Tuple(mid, hi), Tuple(lo, mid - 1));
    lo = bound(s.rows)[0], hi = bound(s.rows)[1];
  }
  return lo;
}

// <name>_allowed: x with the listed tokens penalized (reading x, so a token
// listed twice is penalized once), then the banned ones at banned_logit.
inline Halide::Func lowering::sampling_logits(const sampling_row& s, const std::string& name, const lowered& x,
                                              const lowered& banned, const lowered& penalized,
                                              const Halide::Expr& penalty) {
  using namespace Halide;
  Func f = new_stage(name + "_allowed");
  f(s.at(var(x.dims[0]))) = call(x);
  RDom rp(0, extent(penalized.dims[0]), name + "_penalized_r"), rb(0, extent(banned.dims[0]), name + "_banned_r");
  const Expr p = call(penalized, {{penalized.dims[0], rp.x}}), b = call(banned, {{banned.dims[0], rb.x}});
  const Expr pv = clamp(p, 0, s.vocab - 1), bv = clamp(b, 0, s.vocab - 1);
  f(s.at(pv)) = select(p >= 0 && p < s.vocab, sampling::penalized(call(x, {{x.dims[0], pv}}), penalty), f(s.at(pv)));
  f(s.at(bv)) = select(b >= 0 && b < s.vocab, sampling::banned_logit, f(s.at(bv)));
  rdoms_[name + "_penalized"] = rp, rdoms_[name + "_banned"] = rb;
  return f;
}

} // namespace halformer::dsl

#include "halformer/dsl/lower_sampling_draw.hpp"
