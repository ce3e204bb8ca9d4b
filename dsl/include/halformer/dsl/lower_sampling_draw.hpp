// Lowering of sample_token and token_log_prob (lower_sampling.hpp has the
// stages' list and the searches): the thresholds, then the draw.
#pragma once

#include "halformer/dsl/lower_sampling.hpp"

namespace halformer::dsl {

// What stays of a row after top-k and top-p: every allowed entry with a key above
// `key`, and the first `ties` entries (by id) at it, each of weight `tie_weight`;
// `above` is the weight of the former.
struct lowering::sampling_kept {
  Halide::Expr key, ties, tie_weight, above;
  Halide::Expr total() const { return above + Halide::select(ties > 0, Halide::cast<float>(ties) * tie_weight, 0.0f); }
};

inline lowering::sampling_kept lowering::sampling_thresholds(const sampling_row& s, const std::string& n,
                                                             const Halide::Expr& k, const Halide::Expr& p) {
  using namespace Halide;
  const Expr one = 1, none = 0, no_weight = 0.0f, top_key = sampling::key_of(s.row());
  // top-k: the largest key with >= k entries at or above it.
  const Expr k_on = k > 0 && k < s.vocab;
  // From above the banned entries' key (lowest + 1, so no bound folds to lowest - 1).
  const Expr kk = sampling_search(s, n + "_topk", k_on, std::numeric_limits<int32_t>::min() + 1, top_key, k,
                                  [&](const Expr&) { return one; });
  // Read only where top-k is on (k_ties); k_eq always is: with top-k off, the
  // entries at kk are kept ties.
  Func k_gt = sampling_sum(s, n + "_topk_gt", select(k_on, s.vocab, 0),
                           [&](const Expr& v) { return select(s.key(v) > kk, one, none); });
  Func k_eq =
      sampling_sum(s, n + "_topk_eq", s.vocab, [&](const Expr& v) { return select(s.key(v) == kk, one, none); });
  Func k_mass = sampling_sum(s, n + "_topk_mass", s.vocab,
                             [&](const Expr& v) { return select(s.key(v) > kk, s.weight(v), no_weight); });
  const Expr k_ties = select(k_on, min(k - k_gt(s.rows), k_eq(s.rows)), k_eq(s.rows));
  const sampling_kept by_k{kk, k_ties, s.weight_at(sampling::value_of(kk)), k_mass(s.rows)};
  // top-p: above the top-k threshold every entry is kept, so the largest key whose
  // entries at or above it weigh >= p of the kept total.
  const Expr p_on = p < 1.0f, target = p * by_k.total();
  const Expr pk =
      sampling_search(s, n + "_topp", p_on, kk, top_key, target, [&](const Expr& v) { return s.weight(v); });
  const Expr p_extent = select(p_on, s.vocab, 0);
  Func p_gt = sampling_sum(s, n + "_topp_gt", p_extent,
                           [&](const Expr& v) { return select(s.key(v) > pk, s.weight(v), no_weight); });
  Func p_eq =
      sampling_sum(s, n + "_topp_eq", p_extent, [&](const Expr& v) { return select(s.key(v) == pk, one, none); });
  const Expr available = select(pk == kk, k_ties, p_eq(s.rows)), p_weight = s.weight_at(sampling::value_of(pk));
  // The fewest ties that reach the target (at least one, at most those there are).
  const Expr needed = cast<int>(ceil((target - p_gt(s.rows)) / p_weight));
  const Expr p_ties = clamp(select(p_weight > 0.0f, needed, available), 1, max(available, 1));
  return {select(p_on, pk, kk), select(p_on, min(p_ties, available), k_ties), select(p_on, p_weight, by_k.tie_weight),
          select(p_on, p_gt(s.rows), by_k.above)};
}

// The inverse CDF in vocabulary order over the kept entries at target u x total:
// the chunks' kept weights and ties, their running sums, the first chunk whose
// sum passes the target (the last kept one, should rounding pass none), then that
// chunk's entries one by one. -1 where nothing is kept (every token banned).
inline Halide::Expr lowering::sampling_draw(const sampling_row& s, const std::string& n, const sampling_kept& kept,
                                            const Halide::Expr& u) {
  using namespace Halide;
  constexpr int size = sampling::chunk;
  const Expr chunks = (s.vocab + size - 1) / size, target = u * kept.total();
  std::vector<Var> by_chunk{Var("sample_chunk")};
  by_chunk.insert(by_chunk.end(), s.rows.begin(), s.rows.end());
  const auto at = [&](const Func& f, const Expr& c) {
    std::vector<Expr> a{c};
    a.insert(a.end(), s.rows.begin(), s.rows.end());
    return f(a);
  };
  const auto entry = [&](const Expr& c, const Expr& e) { return min(c * size + e, s.vocab - 1); };
  const auto inside = [&](const Expr& c, const Expr& e) { return c * size + e < s.vocab; };
  RDom re(0, size, n + "_chunk_r");
  const Expr c = by_chunk[0], v = entry(c, re.x);
  Func mass = new_stage(n + "_chunk_mass"), ties = new_stage(n + "_chunk_ties");
  mass(by_chunk) = 0.0f;
  mass(by_chunk) += select(inside(c, re.x) && s.key(v) > kept.key, s.weight(v), 0.0f);
  ties(by_chunk) = 0;
  ties(by_chunk) += select(inside(c, re.x) && s.key(v) == kept.key, 1, 0);
  rdoms_[n + "_chunk"] = re;
  // (weight before chunk c, ties before it); a chunk keeps the ties left to keep.
  Func scan = new_stage(n + "_scan");
  const auto kept_weight = [&](const Expr& k) {
    const Expr t = clamp(kept.ties - at(scan, k)[1], 0, at(ties, k));
    return at(mass, k) + select(t > 0, cast<float>(t) * kept.tie_weight, 0.0f);
  };
  scan(by_chunk) = Tuple(0.0f, 0);
  RDom rc(1, max(chunks - 1, 0), n + "_scan_r");
  std::vector<Expr> lhs{rc.x};
  lhs.insert(lhs.end(), s.rows.begin(), s.rows.end());
  scan(lhs) = Tuple(at(scan, rc.x - 1)[0] + kept_weight(rc.x - 1), at(scan, rc.x - 1)[1] + at(ties, rc.x - 1));
  RDom rk(0, chunks, n + "_choice_r");
  Func first = new_stage(n + "_first"), last = new_stage(n + "_last");
  const Expr holds = kept_weight(rk.x) > 0.0f;
  first(s.rows) = chunks;
  first(s.rows) = min(first(s.rows), select(holds && at(scan, rk.x)[0] + kept_weight(rk.x) > target, rk.x, chunks));
  last(s.rows) = -1;
  last(s.rows) = max(last(s.rows), select(holds, rk.x, -1));
  rdoms_[n + "_choice"] = rk;
  const Expr pick = clamp(select(first(s.rows) < chunks, first(s.rows), last(s.rows)), 0, chunks - 1);
  // (running weight, ties seen, the chosen entry, the last kept entry)
  Func walk = new_stage(n + "_walk");
  walk(s.rows) = Tuple(at(scan, pick)[0], at(scan, pick)[1], -1, -1);
  RDom rw(0, size, n + "_walk_r");
  const Expr w = entry(pick, rw.x), in = inside(pick, rw.x);
  const Expr tie = in && s.key(w) == kept.key;
  const Expr keep = in && (s.key(w) > kept.key || (tie && walk(s.rows)[1] < kept.ties));
  const Expr sum = walk(s.rows)[0] + select(keep, s.weight(w), 0.0f);
  walk(s.rows) =
      Tuple(sum, walk(s.rows)[1] + select(tie, 1, 0),
            select(walk(s.rows)[2] < 0 && keep && sum > target, w, walk(s.rows)[2]), select(keep, w, walk(s.rows)[3]));
  rdoms_[n + "_walk"] = rw;
  return select(last(s.rows) < 0, -1, select(walk(s.rows)[2] >= 0, walk(s.rows)[2], walk(s.rows)[3]));
}

template <class Args>
void lowering::build(const op::sample_token& o, lowered& r, std::vector<lowered>& a, const Args&) {
  using namespace Halide;
  const std::string& n = o.name;
  // The scalars' values, not calls of their Funcs: reduction bounds depend on them.
  sampling_row s{vars(r),
                 extent(a[0].dims[0]),
                 a[7].f.value(),
                 {},
                 new_stage(n + "_top"),
                 new_stage(n + "_keys"),
                 new_stage(n + "_weights")};
  s.allowed = sampling_logits(s, n, a[0], a[3], a[4], a[8].f.value());
  RDom rv(0, s.vocab, n + "_top_r");
  s.top(s.rows) = sampling::banned_logit;
  s.top(s.rows) = max(s.top(s.rows), s.logit(rv.x));
  rdoms_[n + "_top"] = rv;
  s.define_keys_and_weights(var(a[0].dims[0]));
  const Expr sampled = sampling_draw(s, n, sampling_thresholds(s, n, a[5].f.value(), a[6].f.value()), call(a[1]));
  // A stage of its own: GPU schedules check it on the host (no require() in a GPU kernel).
  Func forced = new_stage(n + "_forced");
  forced(s.rows) = require(call(a[2]) < s.vocab, call(a[2]), "forced token", call(a[2]),
                           "is outside the vocabulary [0,", s.vocab, ")");
  r.f(s.rows) = select(forced(s.rows) >= 0, forced(s.rows), sampled);
}

// log p(id) = logit - shift - log(sum of exp(x - shift) + the listed tokens'
// change), the shift the largest logit after the penalty (a penalty < 1 raises
// positive ones).
template <class Args>
void lowering::build(const op::token_log_prob& o, lowered& r, std::vector<lowered>& a, const Args&) {
  using namespace Halide;
  const lowered &x = a[0], &listed = a[1];
  const Expr penalty = scalar_of(a[2]), vocab = extent(x.dims[0]);
  const std::vector<Var> rows = vars(r);
  RDom rv(0, vocab, o.name + "_r"), rl(0, extent(listed.dims[0]), o.name + "_rules_r");
  const auto logit = [&](const Expr& v) { return call(x, {{x.dims[0], v}}); };
  const Expr token = call(listed, {{listed.dims[0], rl.x}}), valid = token >= 0 && token < vocab,
             at = clamp(token, 0, vocab - 1), changed = sampling::penalized(logit(at), penalty);
  Func shift = new_stage(o.name + "_max"), sum = new_stage(o.name + "_sum"), fix = new_stage(o.name + "_fix");
  shift(rows) = logit(0);
  shift(rows) = max(shift(rows), logit(rv.x));
  shift(rows) = max(shift(rows), select(valid, changed, shift(rows)));
  sum(rows) = 0.0f;
  sum(rows) += exp(logit(rv.x) - shift(rows));
  const Expr id = clamp(a[3].f(rows), 0, vocab - 1);
  fix(rows) = Tuple(0.0f, 0); // the listed tokens' change of the sum; whether the row's token is listed
  fix(rows) = Tuple(fix(rows)[0] + select(valid, exp(changed - shift(rows)) - exp(logit(at) - shift(rows)), 0.0f),
                    max(fix(rows)[1], select(valid && token == id, 1, 0)));
  rdoms_[o.name] = rv, rdoms_[o.name + "_rules"] = rl;
  const Expr own = select(fix(rows)[1] > 0, sampling::penalized(logit(id), penalty), logit(id));
  r.f(rows) = own - shift(rows) - log(sum(rows) + fix(rows)[0]);
}

} // namespace halformer::dsl
