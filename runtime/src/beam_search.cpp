#include "beam_search.hpp"

#include "decode_rules.hpp"
#include "search_parts.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace halformer {
namespace {
using namespace search_parts;

// The decode loop's state. Batch rows come in blocks of K (one per beam); block j
// serves sentence block_[j]. Beams live_[s * K + b] are indexed by sentence, so
// dropping a finished sentence's block from the batch moves no beam.
class search {
public:
  using on_done_fn = std::function<void(std::size_t, std::vector<hypothesis>)>;
  search(executor& e, const model_config& c, const decode_options& o, std::size_t first, int n,
         const on_done_fn& on_done)
      : e_(e), c_(c), o_(o), K_(o.beam), first_(first), remaining_(n), live_(std::size_t(n) * K_), next_(live_.size()),
        finished_(std::size_t(n)), done_(std::size_t(n), 0), block_(std::size_t(n)), parent_(live_.size()),
        on_done_(on_done), ids_(1, n * K_), rules_(o, c) {
    for (int s = 0; s < n && !o.target_prefix.empty(); ++s)
      longest_prefix_ = std::max(longest_prefix_, int(o.target_prefix[first + std::size_t(s)].size()));
    longest_prefix_ += forced_bos_ >= 0; // the forced first token comes before each prefix
    for (auto* set : {&live_, &next_})
      for (auto& b : *set)
        b.tokens.reserve(std::size_t(o.max_len));
    for (int s = 0; s < n; ++s)
      live_[std::size_t(s) * K_].alive = true, block_[std::size_t(s)] = s;
    for (auto& f : finished_)
      f.reserve(std::size_t(K_));
    keep_.reserve(live_.size());
    cands_.reserve(std::size_t(K_) * 2 * K_);
    best_.reserve(2 * std::size_t(K_) + 1);
    sorted_chunks_.reserve(std::size_t(c.tgt_vocab / dsl::kernels::beam_candidates::chunk + 1));
  }

  void run() {
    for (int step = 0; step < o_.max_len && remaining_ > 0; ++step) {
      if (e_.profiling())
        e_.profiling()->count_step();
      decode(step);
      if (K_ == 1)
        greedy_step(step);
      else
        beam_step(step);
      if (remaining_ > 0)
        drop_finished(step + 1);
    }
  }

private:
  int blocks() const { return e_.rows() / K_; }
  bool transformers_rules() const { return c_.beam == model_config::beam_rules::transformers; }
  bool banned(int token) const {
    return std::find(c_.banned_ids.begin(), c_.banned_ids.end(), token) != c_.banned_ids.end();
  }
  bool forced_eos(int step) const { return c_.forced_eos && step == o_.max_len - 1; }
  // Whether this step's choices need the rows' logits on the host (decode_rules.hpp).
  bool ruled(int step) const { return needs_row_logits(o_) || step < o_.min_decoding_length || step < longest_prefix_; }
  // The first new token forced with log P 0 (generate's forced_bos_token_id).
  bool forced_first(int step) const { return forced_bos_ >= 0 && step == 0; }
  // Sentence s's forced token at `step` (the forced first token, then its prefix), or -1 past them.
  int prefix_token(int s, int step) const {
    if (forced_bos_ >= 0 && step-- == 0)
      return forced_bos_;
    const sentence* p = o_.target_prefix.empty() ? nullptr : &o_.target_prefix[first_ + std::size_t(s)];
    return p && step < int(p->size()) ? (*p)[std::size_t(step)] : -1;
  }
  // A hypothesis' score at `step` (0-based): its length counts every new token, EOS included.
  double normalized(double score, int step) const {
    return score / std::pow(double(step + 1), double(o_.length_penalty));
  }
  // Log-probabilities add up in float32 under transformers' rules, as its beam scores do.
  double accumulate(double score, float log_prob) const {
    return transformers_rules() ? double(float(score) + log_prob) : score + double(log_prob);
  }
  void decode(int step) {
    for (int j = 0; j < blocks(); ++j)
      for (int b = 0; b < K_; ++b) {
        const beam& x = live_[std::size_t(block_[std::size_t(j)]) * K_ + b];
        ids_(0, j * K_ + b) = step == 0 || x.tokens.empty() ? c_.bos_id : x.tokens.back();
      }
    e_.decode(ids_.cropped(1, 0, e_.rows()), step, false); // only ids or log-probabilities come back
  }

  void finish(int s) {
    auto& f = finished_[std::size_t(s)];
    std::stable_sort(f.begin(), f.end(), [](const hypothesis& a, const hypothesis& b) { return a.score > b.score; });
    if (int(f.size()) > o_.nbest)
      f.resize(std::size_t(o_.nbest));
    done_[std::size_t(s)] = 1;
    --remaining_;
    on_done_(std::size_t(s), std::move(f));
  }

  // Greedy: the kernels pick each row's token; only ids and log-probabilities come
  // back. A banned pick reads the row's candidates instead (beam_candidates: a few
  // chunks of its logits); the step that must end with EOS takes it, certain (log
  // P 0, as transformers' forced EOS).
  void greedy_step(int step) {
    if (samples(o_) && !forced_eos(step))
      return sampled_step(step);
    if (ruled(step))
      return ruled_greedy_step(step);
    const int* ids = nullptr;
    const float* lps = nullptr;
    e_.pick(ids, lps);
    bool from_logits = false;
    for (int j = 0; j < blocks() && !from_logits && !forced_eos(step); ++j)
      from_logits = !done_[std::size_t(block_[std::size_t(j)])] && banned(ids[j]);
    executor::beam_candidates c;
    if (from_logits)
      c = e_.candidates();
    for (int j = 0; j < blocks(); ++j) {
      const int s = block_[std::size_t(j)];
      if (done_[std::size_t(s)])
        continue;
      int id = ids[j];
      float lp = lps[j];
      if (forced_eos(step)) {
        id = c_.eos_id, lp = 0;
      } else if (banned(id)) {
        best_tokens(c, j, 0, 0.0, false);
        id = best_.front().token, lp = row_log_probs(c, j)(c.logits(id, 0, j));
      }
      take(s, id, lp, step);
    }
  }

  // Sampling: the kernel draws each row's token (or takes its prefix token) under
  // its bans and penalties; only ids and log-probabilities come back.
  void sampled_step(int step) {
    const std::size_t rows = std::size_t(blocks());
    for (auto* lists : {&sampling_.banned, &sampling_.penalized})
      lists->resize(rows);
    sampling_.draws.assign(rows, 0.0f), sampling_.forced.assign(rows, -1);
    for (std::size_t j = 0; j < rows; ++j) {
      const int s = block_[j];
      if (done_[std::size_t(s)])
        continue;
      // float32 rounds draws within 2^-25 of 1 up to 1, which would pass every sum
      sampling_.draws[j] = std::min(float(uniform_draw(*o_.seed, first_ + std::size_t(s), step)), 0x1.fffffep-1f);
      sampling_.forced[j] = prefix_token(s, step);
      banned_tokens(o_, c_, live_[std::size_t(s)].tokens, sampling_.banned[j]);
      penalized_tokens(o_, live_[std::size_t(s)].tokens, sampling_.penalized[j]);
    }
    const int* ids = nullptr;
    const float* lps = nullptr;
    e_.sample(o_, sampling_, ids, lps);
    for (std::size_t j = 0; j < rows; ++j)
      if (const int s = block_[j]; !done_[std::size_t(s)]) {
        if (ids[j] < 0)
          throw error("every token of the vocabulary is banned at this step: nothing to sample");
        take(s, ids[j], forced_first(step) ? 0.0f : lps[j], step);
      }
  }

  // Greedy, under the options: each row's prefix token or best allowed token.
  void ruled_greedy_step(int step) {
    const executor::beam_candidates c = e_.candidates();
    for (int j = 0; j < blocks(); ++j) {
      const int s = block_[std::size_t(j)];
      if (done_[std::size_t(s)])
        continue;
      if (forced_eos(step)) {
        take(s, c_.eos_id, 0, step);
        continue;
      }
      prepare_rules(c, j, live_[std::size_t(s)].tokens);
      int id = prefix_token(s, step);
      if (id < 0)
        id = best_allowed(1).front().second;
      take(s, id, forced_first(step) ? 0.0f : rules_.log_prob(id), step);
    }
  }
  void prepare_rules(const executor::beam_candidates& c, int r, const sentence& tokens) {
    const row_log_probs lp(c, r);
    rules_.prepare(tokens, {&c.logits(0, 0, r), &c.chunk_max(0, 0, r), c.chunk_max.dim(0).extent(),
                            dsl::kernels::beam_candidates::chunk, lp.row_max, lp.top});
  }
  const std::vector<std::pair<float, int>>& best_allowed(int k) {
    const auto& b = rules_.best(k);
    if (b.empty())
      throw error("every token of the vocabulary is banned at this step (no_repeat_ngram_size, min_decoding_length)");
    return b;
  }

  // Greedy sentence s takes token `id` of log-probability `lp`.
  void take(int s, int id, float lp, int step) {
    beam& b = live_[std::size_t(s)];
    const double score = accumulate(b.score, lp);
    auto& f = finished_[std::size_t(s)];
    if (id == c_.eos_id) {
      hypothesis h{b.tokens, float(normalized(score, step))};
      h.tokens.push_back(id);
      f.push_back(std::move(h));
    } else {
      b.tokens.push_back(id);
      b.score = score;
      if (step == o_.max_len - 1)
        f.push_back({b.tokens, float(normalized(score, step))});
    }
    if (o_.on_token)
      o_.on_token(first_ + std::size_t(s), id);
    if (!f.empty())
      finish(s);
  }

  // Beam b's (row r's) 2K best allowed tokens into best_ (ties: lower id), by
  // insertion into a short list; `only_eos`: EOS alone, certain (the forced last step).
  // Log-probabilities are logit - max + top, monotone in the logit, so a token
  // whose log-probability is below the (2K + banned)-th best chunk maximum's has 2K
  // better allowed tokens: only chunks whose maximum reaches it are read.
  void best_tokens(const executor::beam_candidates& c, int r, int b, double score, bool only_eos) {
    const float* logit = &c.logits(0, 0, r);
    const float* chunk_max = &c.chunk_max(0, 0, r);
    const int chunks = c.chunk_max.dim(0).extent(), size = dsl::kernels::beam_candidates::chunk;
    const row_log_probs log_prob(c, r);
    best_.clear();
    if (only_eos) {
      best_.push_back({accumulate(score, 0.0f), b, c_.eos_id});
      return;
    }
    sorted_chunks_.assign(chunk_max, chunk_max + chunks);
    const int n = std::min(2 * K_ + int(c_.banned_ids.size()), chunks);
    std::nth_element(sorted_chunks_.begin(), sorted_chunks_.begin() + (n - 1), sorted_chunks_.end(),
                     std::greater<float>());
    const float threshold = log_prob(sorted_chunks_[std::size_t(n - 1)]);
    for (int k = 0; k < chunks; ++k) {
      if (log_prob(chunk_max[k]) < threshold)
        continue;
      for (int v = k * size; v < std::min(c_.tgt_vocab, (k + 1) * size); ++v) {
        if (banned(v))
          continue;
        const candidate cand{accumulate(score, log_prob(logit[v])), b, v};
        if (int(best_.size()) == 2 * K_ && !(cand < best_.back()))
          continue;
        best_.insert(std::upper_bound(best_.begin(), best_.end(), cand), cand);
        if (int(best_.size()) > 2 * K_)
          best_.pop_back();
      }
    }
  }

  // Beam b's (row r's) candidates under the options: its prefix token (only beam 0
  // lives then), or its 2K best allowed tokens.
  void ruled_tokens(const executor::beam_candidates& c, int s, int r, int b, int step) {
    const beam& from = live_[std::size_t(s) * K_ + b];
    best_.clear();
    if (forced_eos(step)) {
      best_.push_back({accumulate(from.score, 0.0f), b, c_.eos_id});
      return;
    }
    prepare_rules(c, r, from.tokens);
    if (const int forced = prefix_token(s, step); forced >= 0) {
      best_.push_back({accumulate(from.score, forced_first(step) ? 0.0f : rules_.log_prob(forced)), b, forced});
      return;
    }
    for (const auto& [logit, v] : best_allowed(2 * K_))
      best_.push_back({accumulate(from.score, rules_.log_prob(v)), b, v});
  }

  void beam_step(int step) {
    const executor::beam_candidates c = e_.candidates();
    for (int r = 0; r < e_.rows(); ++r)
      parent_[std::size_t(r)] = r;
    for (int j = 0; j < blocks(); ++j) {
      const int s = block_[std::size_t(j)];
      if (done_[std::size_t(s)])
        continue;
      cands_.clear();
      for (int b = 0; b < K_; ++b)
        if (live_[std::size_t(s) * K_ + b].alive) {
          if (ruled(step))
            ruled_tokens(c, s, j * K_ + b, b, step);
          else
            best_tokens(c, j * K_ + b, b, live_[std::size_t(s) * K_ + b].score, forced_eos(step));
          cands_.insert(cands_.end(), best_.begin(), best_.end());
        }
      std::sort(cands_.begin(), cands_.end());
      extend(s, j, step);
    }
    e_.reorder_caches(parent_, step + 1);
  }

  // Sentence s (rows of block j) takes the ranked candidates.
  void extend(int s, int j, int step) {
    const bool last = step == o_.max_len - 1;
    auto& f = finished_[std::size_t(s)];
    int extended = 0;
    for (std::size_t rank = 0; rank < cands_.size(); ++rank) {
      const candidate& cand = cands_[rank];
      const beam& from = live_[std::size_t(s) * K_ + cand.beam];
      if (cand.token == c_.eos_id) {
        if (transformers_rules() && int(rank) >= K_)
          continue;
        hypothesis h{from.tokens, float(normalized(cand.score, step))};
        h.tokens.push_back(cand.token);
        add_finished(f, std::move(h), K_, transformers_rules());
      } else {
        beam& to = next_[std::size_t(s) * K_ + extended];
        to.tokens.assign(from.tokens.begin(), from.tokens.end());
        to.tokens.push_back(cand.token);
        to.score = cand.score, to.alive = true;
        parent_[std::size_t(j) * K_ + extended] = j * K_ + cand.beam;
        ++extended;
      }
      if (extended == K_)
        break;
    }
    for (int b = extended; b < K_; ++b)
      next_[std::size_t(s) * K_ + b].alive = false;
    if (last && !(transformers_rules() && int(f.size()) >= K_)) // (there a sentence with beam hypotheses is done)
      for (int b = 0; b < extended; ++b) {
        const beam& x = next_[std::size_t(s) * K_ + b];
        add_finished(f, {x.tokens, float(normalized(x.score, step))}, K_, transformers_rules());
      }
    for (int b = 0; b < K_; ++b)
      std::swap(live_[std::size_t(s) * K_ + b], next_[std::size_t(s) * K_ + b]);
    if (int(f.size()) >= K_ || extended == 0 || last)
      finish(s);
  }

  // Finished sentences leave the batch once they are at least an eighth of it:
  // later steps then cost only the live rows, and the rows' copies (their caches
  // up to `len` positions and cross-attention keys and values) stay rare.
  void drop_finished(int len) {
    int dead = 0;
    for (int j = 0; j < blocks(); ++j)
      dead += done_[std::size_t(block_[std::size_t(j)])];
    if (dead == 0 || dead * 8 < blocks())
      return;
    keep_.clear();
    int kept = 0;
    for (int j = 0; j < blocks(); ++j) {
      const int s = block_[std::size_t(j)];
      if (done_[std::size_t(s)])
        continue;
      for (int b = 0; b < K_; ++b)
        keep_.push_back(j * K_ + b);
      block_[std::size_t(kept++)] = s;
    }
    e_.keep_rows(keep_, len);
  }

  executor& e_;
  const model_config& c_;
  const decode_options& o_;
  const int K_;
  const std::size_t first_; // the call's index of this chunk's first sentence
  int remaining_, longest_prefix_ = 0;
  const int forced_bos_ = o_.forced_bos_id >= 0 ? o_.forced_bos_id : c_.forced_bos_id;
  std::vector<beam> live_, next_;
  std::vector<std::vector<hypothesis>> finished_;
  std::vector<char> done_;
  std::vector<int> block_, parent_, keep_;
  std::vector<candidate> cands_, best_;
  std::vector<float> sorted_chunks_; // a row's chunk maxima, partially sorted
  const on_done_fn& on_done_;
  ibuffer ids_;
  row_rules rules_;
  executor::sampling_rows sampling_;
};
} // namespace

void beam_search(executor& e, const model_config& c, const ibuffer& ids, const ibuffer& lengths,
                 const decode_options& o, std::size_t first,
                 const std::function<void(std::size_t, std::vector<hypothesis>)>& on_done) {
  const int n = ids.dim(1).extent();
  e.reserve({n * o.beam, ids.dim(0).extent(), o.max_len + 1, 1, n});
  {
    scoped_time timed(e.profiling(), phase::encode);
    e.encode(ids, lengths);
    e.project_memory(); // once per source: its beams share the cross-attention keys and values
    e.expand(o.beam);
  }
  scoped_time timed(e.profiling(), phase::decode);
  search(e, c, o, first, n, on_done).run();
}

} // namespace halformer
