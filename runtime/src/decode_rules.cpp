#include "decode_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace halformer {

namespace {
void check_prefixes(const decode_options& o, std::size_t sources, const model_config& c) {
  if (!o.target_prefix.empty() && o.target_prefix.size() != sources)
    throw error("target_prefix has " + std::to_string(o.target_prefix.size()) + " entries for " +
                std::to_string(sources) + " sources (none, or one per source)");
  const int forced = o.forced_bos_id >= 0 || c.forced_bos_id >= 0; // a token before each prefix
  if (o.forced_bos_id >= c.tgt_vocab || o.forced_bos_id < -1)
    throw error("forced_bos_id " + std::to_string(o.forced_bos_id) + " is outside the vocabulary [0, " +
                std::to_string(c.tgt_vocab) + ")");
  for (std::size_t i = 0; i < o.target_prefix.size(); ++i) {
    const sentence& p = o.target_prefix[i];
    if (int(p.size()) + forced >= o.max_len)
      throw error("target_prefix " + std::to_string(i) + " has " + std::to_string(p.size()) +
                  " tokens: it must be shorter than max_len (" + std::to_string(o.max_len) + ")" +
                  (forced ? " less the forced first token" : ""));
    for (std::size_t j = 0; j < p.size(); ++j) {
      if (p[j] < 0 || p[j] >= c.tgt_vocab)
        throw error("target_prefix " + std::to_string(i) + ", position " + std::to_string(j) + ": token id " +
                    std::to_string(p[j]) + " is outside the vocabulary [0, " + std::to_string(c.tgt_vocab) + ")");
      if (p[j] == c.eos_id)
        throw error("target_prefix " + std::to_string(i) + ", position " + std::to_string(j) +
                    ": the EOS id ends a hypothesis; a prefix cannot hold it");
    }
  }
}

void check_sampling(const decode_options& o) {
  if (o.sampling_topk < 0)
    throw error("sampling_topk must be >= 0 (0: the whole vocabulary; 1: greedy), not " +
                std::to_string(o.sampling_topk));
  if (!(o.sampling_topp > 0 && o.sampling_topp <= 1))
    throw error("sampling_topp must be in (0, 1], not " + std::to_string(o.sampling_topp));
  if (!(o.sampling_temperature > 0) || !std::isfinite(o.sampling_temperature))
    throw error("sampling_temperature must be > 0, not " + std::to_string(o.sampling_temperature));
  if (samples(o) && o.beam > 1)
    throw error("random sampling (sampling_topk " + std::to_string(o.sampling_topk) +
                ") takes beam 1, as CTranslate2's does, not beam " + std::to_string(o.beam));
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool better(const std::pair<float, int>& a, const std::pair<float, int>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}
} // namespace

std::string limit_text(const model_config& c, int limit) {
  return std::to_string(limit) + (limit == c.max_positions ? " (the model's max_position_embeddings)" : "");
}

void check_decode_options(const decode_options& o, std::size_t sources, const model_config& c, int max_target_length) {
  if (o.beam < 1)
    throw error("beam must be >= 1, not " + std::to_string(o.beam));
  if (o.nbest < 1 || o.nbest > o.beam)
    throw error("nbest must be in [1, beam = " + std::to_string(o.beam) + "], not " + std::to_string(o.nbest));
  if (o.max_len < 1 || o.max_len > max_target_length)
    throw error("max_len must be in [1, " + limit_text(c, max_target_length) + "], not " + std::to_string(o.max_len));
  if (!(o.length_penalty >= 0))
    throw error("length_penalty must be >= 0");
  check_prefixes(o, sources, c);
  check_sampling(o);
  if (!(o.repetition_penalty > 0) || !std::isfinite(o.repetition_penalty))
    throw error("repetition_penalty must be > 0, not " + std::to_string(o.repetition_penalty));
  if (o.no_repeat_ngram_size < 0)
    throw error("no_repeat_ngram_size must be >= 0, not " + std::to_string(o.no_repeat_ngram_size));
  if (o.min_decoding_length < 0 || o.min_decoding_length > o.max_len)
    throw error("min_decoding_length must be in [0, max_len = " + std::to_string(o.max_len) + "], not " +
                std::to_string(o.min_decoding_length));
  if (o.max_input_length < 0)
    throw error("max_input_length must be >= 0 (0: no limit), not " + std::to_string(o.max_input_length));
  if (o.on_token && o.beam > 1)
    throw error("a per-token callback takes beam 1 (a beam's tokens are final only when its sentence is), not beam " +
                std::to_string(o.beam));
}

bool needs_row_logits(const decode_options& o) {
  return samples(o) || o.repetition_penalty != 1.0f || o.no_repeat_ngram_size > 0;
}

double uniform_draw(std::uint64_t seed, std::size_t sentence, int step) {
  const std::uint64_t x = splitmix64(splitmix64(seed ^ splitmix64(sentence)) ^ std::uint64_t(step));
  return double(x >> 11) * 0x1.0p-53;
}

void penalized_tokens(const decode_options& o, const sentence& tokens, std::vector<int>& out) {
  out.clear();
  if (o.repetition_penalty == 1.0f)
    return;
  out.assign(tokens.begin(), tokens.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

namespace {
// The n-grams whose first n - 1 tokens end the hypothesis: their last tokens.
void ngram_bans(const decode_options& o, const sentence& tokens, std::vector<int>& out) {
  out.clear();
  const int n = o.no_repeat_ngram_size, len = int(tokens.size());
  for (int i = 0; n > 0 && i + n <= len; ++i)
    if (std::equal(tokens.begin() + i, tokens.begin() + i + n - 1, tokens.end() - (n - 1)))
      out.push_back(tokens[std::size_t(i + n - 1)]);
}
} // namespace

void banned_tokens(const decode_options& o, const model_config& c, const sentence& tokens, std::vector<int>& out) {
  ngram_bans(o, tokens, out);
  out.insert(out.end(), c.banned_ids.begin(), c.banned_ids.end());
  if (int(tokens.size()) < o.min_decoding_length)
    out.push_back(c.eos_id);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

void row_rules::prepare(const sentence& tokens, const row& r) {
  row_ = r;
  const float *logits = r.logits, row_max = r.row_max, top_log_prob = r.top_log_prob;
  penalized_tokens(o_, tokens, penalized_);
  banned_tokens(o_, c_, tokens, banned_);
  // The kernels' log-probabilities are logit - max + top: a sum of exp(logit - max)
  // of 1 / exp(top). The penalty moves a few logits; the sum moves by their change.
  double change = 0;
  for (int v : penalized_)
    change += std::exp(double(logit(v)) - row_max) - std::exp(double(logits[v]) - row_max);
  log_norm_shift_ = float(double(top_log_prob) - std::log1p(change * std::exp(double(top_log_prob))));
}

bool row_rules::allowed(int token) const { return !std::binary_search(banned_.begin(), banned_.end(), token); }

float row_rules::logit(int token) const {
  const float l = row_.logits[token];
  if (!std::binary_search(penalized_.begin(), penalized_.end(), token))
    return l;
  return l > 0 ? l / o_.repetition_penalty : l * o_.repetition_penalty;
}

float row_rules::log_prob(int token) const { return logit(token) - row_.row_max + log_norm_shift_; }

// Chunks in descending order of their maxima, each read whole, until the next
// one's maximum is below the k-th best allowed logit found: a penalty >= 1 only
// lowers logits, so a chunk's maximum bounds its logits after it too.
void row_rules::best_of_chunks(int k) {
  chunk_order_.clear();
  for (int c = 0; c < row_.chunks; ++c)
    chunk_order_.emplace_back(row_.chunk_max[c], c);
  std::sort(chunk_order_.begin(), chunk_order_.end(), better);
  for (const auto& [chunk_max, c] : chunk_order_) {
    if (int(best_.size()) == k && chunk_max < best_.back().first)
      break;
    for (int v = c * row_.chunk; v < std::min(c_.tgt_vocab, (c + 1) * row_.chunk); ++v) {
      if (!allowed(v))
        continue;
      const std::pair<float, int> x{logit(v), v};
      if (int(best_.size()) == k && !better(x, best_.back()))
        continue;
      best_.insert(std::upper_bound(best_.begin(), best_.end(), x, better), x);
      if (int(best_.size()) > k)
        best_.pop_back();
    }
  }
}

const std::vector<std::pair<float, int>>& row_rules::best(int k) {
  best_.clear();
  if (k > 0 && k <= 64 && o_.repetition_penalty >= 1.0f) {
    best_of_chunks(k);
    return best_;
  }
  for (int v = 0; v < c_.tgt_vocab; ++v)
    if (allowed(v))
      best_.emplace_back(logit(v), v);
  if (k > 0 && k < int(best_.size())) {
    std::partial_sort(best_.begin(), best_.begin() + k, best_.end(), better);
    best_.resize(std::size_t(k));
  } else {
    std::sort(best_.begin(), best_.end(), better);
  }
  return best_;
}

} // namespace halformer
