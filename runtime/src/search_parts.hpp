// Parts of the decode loop (beam_search.cpp): a beam, a ranked candidate, a row's
// log-probabilities from the candidates kernel, and the finished hypotheses' rule.
#pragma once

#include "executor.hpp"

#include <algorithm>
#include <vector>

namespace halformer::search_parts {
struct beam {
  std::vector<int> tokens;
  double score = 0;
  bool alive = false;
};
struct candidate {
  double score;
  int beam, token;
  bool operator<(const candidate& o) const { // better first
    if (score != o.score)
      return score > o.score;
    if (beam != o.beam)
      return beam < o.beam;
    return token < o.token;
  }
};

// A row's log-probabilities from its candidates: logit - max + the best's.
struct row_log_probs {
  float row_max, top;
  row_log_probs(const executor::beam_candidates& c, int r) {
    const int chunks = c.chunk_max.dim(0).extent();
    const float* chunk_max = &c.chunk_max(0, 0, r);
    row_max = *std::max_element(chunk_max, chunk_max + chunks), top = c.top_log_prob(0, r);
  }
  float operator()(float logit) const { return (logit - row_max) + top; }
};

// Adds a finished hypothesis. transformers' rules keep the beam best by score (on
// a tie the earlier); halformer's keep the first beam ones.
inline void add_finished(std::vector<hypothesis>& f, hypothesis h, int K, bool transformers_rules) {
  if (!transformers_rules) {
    if (int(f.size()) < K)
      f.push_back(std::move(h));
    return;
  }
  const auto worst = [&] {
    return std::min_element(f.begin(), f.end(),
                            [](const hypothesis& a, const hypothesis& b) { return a.score < b.score; });
  };
  if (int(f.size()) == K && !(h.score > worst()->score))
    return;
  f.push_back(std::move(h));
  if (int(f.size()) > K)
    f.erase(worst());
}

} // namespace halformer::search_parts
