// Random sampling's reference for one row of logits (the sample_pick kernel),
// in float64 and written from the definition, not from the kernel's method:
// sort the allowed tokens (logit descending, id ascending), keep the first
// top_k, then the fewest of those whose weights exp((logit - max) / T) reach
// top_p of their sum; draw by the inverse CDF in vocabulary order.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ref {

struct sampling_options {
  int top_k = 0;    // 0: every token
  double top_p = 1; // 1: every token
  double temperature = 1;
  double penalty = 1; // on the penalized tokens: logit / penalty where > 0, logit * penalty elsewhere
};

struct sampled_row {
  std::vector<int> kept;       // vocabulary order
  std::vector<double> weights; // of `kept`
  std::vector<double> logits;  // the whole row after the penalty (log_prob's)
  double total = 0;
  // The token at draw u: the first whose running weight passes u x total.
  int token(double u) const {
    double sum = 0;
    for (std::size_t i = 0; i < kept.size(); ++i)
      if ((sum += weights[i]) > u * total)
        return kept[i];
    return kept.empty() ? -1 : kept.back();
  }
  // The draws in [0, 1) that choose `token`: [lo, hi); empty (lo > hi) when it is not kept.
  std::pair<double, double> draws_of(int token) const {
    double sum = 0;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      if (kept[i] == token)
        return {sum / total, (sum + weights[i]) / total};
      sum += weights[i];
    }
    return {1, 0};
  }
  // log softmax of the penalized row at temperature 1, bans not removed.
  double log_prob(int token) const {
    const double m = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (double l : logits)
      z += std::exp(l - m);
    return logits[std::size_t(token)] - m - std::log(z);
  }
};

inline double penalized_logit(double x, double penalty) { return x > 0 ? x / penalty : x * penalty; }

// x: the row's V logits; banned and penalized: token ids (-1 and out-of-range ignored).
inline sampled_row sample_row(const std::vector<double>& x, const std::vector<int>& banned,
                              const std::vector<int>& penalized, const sampling_options& o) {
  const int V = int(x.size());
  sampled_row r;
  r.logits = x;
  std::vector<bool> is_penalized(std::size_t(V), false), allowed(std::size_t(V), true);
  for (int t : penalized)
    if (t >= 0 && t < V)
      is_penalized[std::size_t(t)] = true;
  for (int v = 0; v < V; ++v)
    if (is_penalized[std::size_t(v)])
      r.logits[std::size_t(v)] = penalized_logit(x[std::size_t(v)], o.penalty);
  for (int t : banned)
    if (t >= 0 && t < V)
      allowed[std::size_t(t)] = false;
  std::vector<int> order;
  for (int v = 0; v < V; ++v)
    if (allowed[std::size_t(v)] && r.logits[std::size_t(v)] > -std::numeric_limits<double>::infinity())
      order.push_back(v);
  if (order.empty())
    return r;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return r.logits[std::size_t(a)] > r.logits[std::size_t(b)]; });
  if (o.top_k > 0 && o.top_k < int(order.size()))
    order.resize(std::size_t(o.top_k));
  const double top = r.logits[std::size_t(order[0])];
  std::vector<double> w;
  double total = 0;
  for (int v : order)
    total += w.emplace_back(std::exp((r.logits[std::size_t(v)] - top) / o.temperature));
  std::size_t n = order.size();
  if (o.top_p < 1) {
    double mass = 0;
    for (n = 0; n < order.size() && (n == 0 || mass < o.top_p * total); ++n)
      mass += w[n];
  }
  std::vector<std::pair<int, double>> kept;
  for (std::size_t i = 0; i < n; ++i)
    kept.emplace_back(order[i], w[i]);
  std::sort(kept.begin(), kept.end());
  for (const auto& [v, weight] : kept) {
    r.kept.push_back(v), r.weights.push_back(weight);
    r.total += weight;
  }
  return r;
}

} // namespace ref
