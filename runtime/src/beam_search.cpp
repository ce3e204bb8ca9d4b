#include "beam_search.hpp"

#include <algorithm>
#include <cmath>

namespace halformer {

namespace {
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
} // namespace

void beam_search(executor& e, const model_config& c, const ibuffer& ids, const ibuffer& lengths,
                 const decode_options& o, const std::function<void(std::size_t, std::vector<hypothesis>)>& on_done) {
  const int n = ids.dim(1).extent(), K = o.beam, rows = n * K, V = c.tgt_vocab;
  e.reserve(rows, ids.dim(0).extent(), o.max_len + 1);
  {
    phase_timer timed(e.profiling(), phase::encode);
    e.encode(ids, lengths);
    e.expand(K);
    e.project_memory();
  }
  phase_timer timed(e.profiling(), phase::decode);

  std::vector<beam> live(rows), next(rows);
  for (auto* set : {&live, &next})
    for (auto& b : *set)
      b.tokens.reserve(o.max_len);
  for (int s = 0; s < n; ++s)
    live[s * K].alive = true;
  std::vector<std::vector<hypothesis>> finished(n);
  for (auto& f : finished)
    f.reserve(K);
  std::vector<char> done(n, 0);
  std::vector<int> parent(rows);
  std::vector<candidate> cands, best;
  cands.reserve(std::size_t(K) * 2 * K);
  best.reserve(2 * K + 1);
  ibuffer step_ids(1, rows);
  const auto normalized = [&](double score, int len) {
    return score / std::pow(double(len), double(o.length_penalty));
  };
  const auto finish = [&](int s) {
    auto& f = finished[s];
    std::stable_sort(f.begin(), f.end(), [](const hypothesis& a, const hypothesis& b) { return a.score > b.score; });
    if (int(f.size()) > o.nbest)
      f.resize(o.nbest);
    done[s] = 1;
    on_done(std::size_t(s), std::move(f));
  };

  int remaining = n;
  if (K == 1) { // greedy: the kernels pick each row's token; only ids and log-probabilities come back
    for (int step = 0; step < o.max_len && remaining > 0; ++step) {
      if (e.profiling())
        e.profiling()->count_step();
      for (int r = 0; r < rows; ++r)
        step_ids(0, r) = step == 0 || live[r].tokens.empty() ? c.bos_id : live[r].tokens.back();
      e.decode(step_ids, step, false);
      const int* ids = nullptr;
      const float* lps = nullptr;
      e.pick(ids, lps);
      for (int s = 0; s < n; ++s) {
        if (done[s])
          continue;
        beam& b = live[s];
        const double score = b.score + double(lps[s]);
        if (ids[s] == c.eos_id) {
          hypothesis h{b.tokens, float(normalized(score, step + 1))};
          h.tokens.push_back(ids[s]);
          finished[s].push_back(std::move(h));
        } else {
          b.tokens.push_back(ids[s]);
          b.score = score;
          if (step == o.max_len - 1)
            finished[s].push_back({b.tokens, float(normalized(score, step + 1))});
        }
        if (!finished[s].empty()) {
          finish(s);
          --remaining;
        }
      }
    }
    return;
  }
  for (int step = 0; step < o.max_len && remaining > 0; ++step) {
    if (e.profiling())
      e.profiling()->count_step();
    for (int r = 0; r < rows; ++r)
      step_ids(0, r) = step == 0 || live[r].tokens.empty() ? c.bos_id : live[r].tokens.back();
    e.decode(step_ids, step, false); // only the log-probabilities come to the host
    fbuffer lp = e.log_probs();      // (vocab, 1, rows)
    for (int r = 0; r < rows; ++r)
      parent[r] = r;
    const bool last = step == o.max_len - 1;
    for (int s = 0; s < n; ++s) {
      if (done[s])
        continue;
      cands.clear();
      for (int b = 0; b < K; ++b) {
        const int r = s * K + b;
        if (!live[r].alive)
          continue;
        // The beam's 2K best tokens (ties: lower id), by insertion into a short list.
        best.clear();
        const float* row = &lp(0, 0, r);
        for (int v = 0; v < V; ++v) {
          const candidate cand{live[r].score + double(row[v]), b, v};
          if (int(best.size()) == 2 * K && !(cand < best.back()))
            continue;
          best.insert(std::upper_bound(best.begin(), best.end(), cand), cand);
          if (int(best.size()) > 2 * K)
            best.pop_back();
        }
        cands.insert(cands.end(), best.begin(), best.end());
      }
      std::sort(cands.begin(), cands.end());
      int extended = 0;
      for (const candidate& cand : cands) {
        const beam& from = live[s * K + cand.beam];
        if (cand.token == c.eos_id) {
          if (int(finished[s].size()) < K) {
            hypothesis h{from.tokens, 0};
            h.tokens.push_back(cand.token);
            h.score = float(normalized(cand.score, step + 1));
            finished[s].push_back(std::move(h));
          }
        } else {
          beam& to = next[s * K + extended];
          to.tokens.assign(from.tokens.begin(), from.tokens.end());
          to.tokens.push_back(cand.token);
          to.score = cand.score;
          to.alive = true;
          parent[s * K + extended] = s * K + cand.beam;
          ++extended;
        }
        if (extended == K)
          break;
      }
      for (int b = extended; b < K; ++b)
        next[s * K + b].alive = false;
      if (last)
        for (int b = 0; b < extended && int(finished[s].size()) < K; ++b) {
          const beam& x = next[s * K + b];
          finished[s].push_back({x.tokens, float(normalized(x.score, step + 1))});
        }
      for (int b = 0; b < K; ++b)
        std::swap(live[s * K + b], next[s * K + b]);
      if (int(finished[s].size()) >= K || extended == 0 || last) {
        finish(s);
        --remaining;
      }
    }
    if (K > 1 && remaining > 0)
      e.reorder_caches(parent, step + 1);
  }
}

} // namespace halformer
