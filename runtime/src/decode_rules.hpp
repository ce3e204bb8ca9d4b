// What decode_options add to greedy and beam search (beam_search.cpp): forced
// target prefixes, random sampling, the repetition penalty, n-gram bans and a
// minimum length. Sampling runs in a kernel (executor::sample(), given each row's
// draw and token lists from here); the other rules work on the host over a row's
// logits (the candidates() the kernels leave), so a search with none of them
// keeps the kernels' own pick and chunk-pruned candidates.
#pragma once

#include "halformer/config.hpp"
#include "halformer/model.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace halformer {

// Throws halformer::error naming the first bad option, for a call of `sources`
// sentences on a model of `config` that decodes at most `max_target_length` tokens.
void check_decode_options(const decode_options& o, std::size_t sources, const model_config& config,
                          int max_target_length);
// A length limit in messages, saying where it is the model's last position.
std::string limit_text(const model_config& c, int limit);

// Whether any option needs a row's logits on the host at every step.
bool needs_row_logits(const decode_options& o);
inline bool samples(const decode_options& o) { return o.sampling_topk != 1; }

// A uniform draw in [0, 1), a function of (seed, sentence, step) only: the same
// in any batch, chunk or thread count (splitmix64 of the three).
double uniform_draw(std::uint64_t seed, std::size_t sentence, int step);

// A hypothesis' token lists under the options, each sorted, each token once: the
// tokens the repetition penalty applies to (those it holds), and those it may not
// take (the model's banned ids, EOS before min_decoding_length, the tokens that
// would repeat an n-gram). The sampling kernel and row_rules both read these.
void penalized_tokens(const decode_options& o, const sentence& tokens, std::vector<int>& out);
void banned_tokens(const decode_options& o, const model_config& c, const sentence& tokens, std::vector<int>& out);

// One row's distribution under the options, for a hypothesis: its logits with
// the repetition penalty, the banned tokens (the model's, EOS before the minimum
// length, tokens that would repeat an n-gram) and log-probabilities at
// temperature 1, normalized over the whole vocabulary as the kernels' are.
class row_rules {
public:
  row_rules(const decode_options& o, const model_config& c) : o_(o), c_(c) {}
  // The row as the candidates kernel leaves it (executor::beam_candidates): its
  // logits, each chunk's largest (`chunks` of `chunk` entries), the row's
  // maximum and its best token's log-probability.
  struct row {
    const float* logits;
    const float* chunk_max;
    int chunks, chunk;
    float row_max, top_log_prob;
  };
  // `tokens`: the hypothesis so far (prefix included).
  void prepare(const sentence& tokens, const row& r);
  bool allowed(int token) const;
  float logit(int token) const; // after the repetition penalty
  float log_prob(int token) const;
  // The `k` best allowed tokens by logit, best first (ties: the lower id); k 0: all.
  const std::vector<std::pair<float, int>>& best(int k);

private:
  const decode_options& o_;
  const model_config& c_;
  void best_of_chunks(int k); // best(k) reading only the chunks whose maximum can reach it
  row row_{};
  float log_norm_shift_ = 0;            // log-probability = logit - row_max + shift
  std::vector<int> penalized_, banned_; // sorted
  std::vector<std::pair<float, int>> best_;
  std::vector<std::pair<float, int>> chunk_order_;
};

} // namespace halformer
