// decode_options beyond greedy and beam search (runtime/src/decode_rules.hpp):
// each hypothesis replayed step by step through decode_step(), whose logits an
// independent float64 rule turns into the token that step must take; sampling's
// first-token frequencies against softmax(logits / T) and its truncations;
// seeds that repeat across batch sizes and thread counts; and the options' errors.
#include "fixtures.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using Catch::Matchers::Contains;
using halformer::decode_options;
using halformer::Model;
using halformer::sentence;

namespace {
// The random tiny model (vocabulary 29): flat, unpredictable distributions.
Model tiny(int threads = 0, int max_batch = 64) {
  halformer::load_options o;
  o.threads = threads, o.max_batch = max_batch;
  return Model::load(fixtures::dir("post_ln_relu"), o);
}

// The reference's rules, in float64, from decode_option's documented meaning.
struct rules {
  double penalty = 1;
  int ngram = 0, min_len = 0;
};
int expected_token(const std::vector<float>& logits, const sentence& h, const rules& r, int eos) {
  int best = -1;
  double best_logit = -INFINITY;
  for (int v = 0; v < int(logits.size()); ++v) {
    if (v == eos && int(h.size()) < r.min_len)
      continue;
    bool repeats = false;
    for (int i = 0; r.ngram > 0 && i + r.ngram <= int(h.size()); ++i)
      repeats |= std::equal(h.begin() + i, h.begin() + i + r.ngram - 1, h.end() - (r.ngram - 1)) &&
                 h[std::size_t(i + r.ngram - 1)] == v;
    if (repeats)
      continue;
    double l = logits[std::size_t(v)];
    if (std::find(h.begin(), h.end(), v) != h.end())
      l = l > 0 ? l / r.penalty : l * r.penalty;
    if (l > best_logit)
      best = v, best_logit = l;
  }
  return best;
}

// Replays hypothesis `h` of `source` through decode_step: every token past the
// prefix must be the rules' choice from that step's logits.
void check_replay(Model& m, const sentence& source, const sentence& h, const rules& r, std::size_t prefix = 0) {
  m.begin({source});
  int previous = m.config().bos_id;
  for (std::size_t k = 0; k < h.size(); ++k) {
    const std::vector<float> logits = m.decode_step({previous});
    if (k >= prefix) {
      INFO("step " << k);
      REQUIRE(h[k] == expected_token(logits, sentence(h.begin(), h.begin() + long(k)), r, m.config().eos_id));
    }
    previous = h[k];
  }
}

std::vector<double> softmax(const std::vector<float>& logits, double temperature) {
  std::vector<double> p(logits.size());
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (std::size_t v = 0; v < p.size(); ++v)
    sum += p[v] = std::exp((logits[v] - top) / temperature);
  for (double& x : p)
    x /= sum;
  return p;
}

// softmax(logits / T), then the k most likely (0: all), then the most likely
// whose probabilities reach topp, renormalized.
std::vector<double> truncated(const std::vector<float>& logits, double temperature, int k, double topp) {
  std::vector<double> p = softmax(logits, temperature);
  std::vector<int> order(p.size());
  for (std::size_t v = 0; v < order.size(); ++v)
    order[v] = int(v);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[std::size_t(a)] > p[std::size_t(b)]; });
  const std::size_t kept_k = k > 0 ? std::size_t(k) : p.size();
  double mass_k = 0;
  for (std::size_t i = 0; i < kept_k; ++i)
    mass_k += p[std::size_t(order[i])];
  std::vector<double> q(p.size(), 0.0);
  double mass = 0;
  for (std::size_t i = 0; i < kept_k && (i == 0 || mass < topp * mass_k); ++i)
    mass += q[std::size_t(order[i])] = p[std::size_t(order[i])];
  for (double& x : q)
    x /= mass;
  return q;
}

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double tv = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    tv += std::abs(a[i] - b[i]);
  return tv / 2;
}

const sentence source{5, 9, 3, 14, 7, 2};
} // namespace

TEST_CASE("greedy under bans and the repetition penalty takes the rules' token at every step", "[decode_options]") {
  Model m = tiny();
  for (const rules r :
       {rules{1.0, 2, 0}, rules{1.0, 1, 0}, rules{2.5, 0, 0}, rules{0.5, 0, 0}, rules{1.0, 0, 12}, rules{3.0, 3, 5}}) {
    decode_options o;
    o.max_len = 16, o.repetition_penalty = float(r.penalty), o.no_repeat_ngram_size = r.ngram;
    o.min_decoding_length = r.min_len;
    const sentence h = m.translate({source}, o)[0][0].tokens;
    INFO("penalty " << r.penalty << ", ngram " << r.ngram << ", min length " << r.min_len);
    CHECK(int(h.size()) >= std::min(r.min_len + 1, o.max_len));
    check_replay(m, source, h, r);
  }
}

TEST_CASE("at Transformer-base width (vocabulary 1200: 19 chunks) the pruned choices are the rules' too",
          "[decode_options]") {
  // A penalty >= 1 keeps each chunk's maximum a bound, and the choice reads only
  // the chunks that can reach it (decode_rules.cpp best_of_chunks).
  Model m = Model::load(fixtures::dir("base_width"));
  const sentence src{5, 9, 3, 14, 7, 300, 2};
  for (const rules r : {rules{1.5, 2, 4}, rules{1.0, 1, 0}}) {
    decode_options o;
    o.max_len = 24, o.repetition_penalty = float(r.penalty), o.no_repeat_ngram_size = r.ngram;
    o.min_decoding_length = r.min_len;
    check_replay(m, src, m.translate({src}, o)[0][0].tokens, r);
  }
}

TEST_CASE("a target prefix starts every hypothesis, greedy and beam, and decoding goes on after it",
          "[decode_options]") {
  Model m = tiny();
  const sentence prefix{7, 11, 4};
  for (const int beam : {1, 4}) {
    decode_options o;
    o.max_len = 12, o.beam = beam, o.nbest = beam, o.target_prefix = {prefix, {}};
    const auto results = m.translate({source, source}, o);
    for (const auto& h : results[0])
      CHECK(sentence(h.tokens.begin(), h.tokens.begin() + 3) == prefix);
    if (beam == 1)
      check_replay(m, source, results[0][0].tokens, rules{}, prefix.size());
    decode_options plain = o;
    plain.target_prefix.clear();
    CHECK(results[1][0].tokens == m.translate({source}, plain)[0][0].tokens); // an empty prefix changes nothing
  }
}

TEST_CASE("sampling's first tokens follow softmax(logits / T), top-k and top-p within the stated bound",
          "[decode_options][sampling]") {
  Model m = tiny();
  m.begin({source});
  const std::vector<float> logits = m.decode_step({m.config().bos_id});
  constexpr int draws = 6000;
  struct setting {
    int k;
    float p, temperature;
  };
  for (const setting s : {setting{0, 1.0f, 1.0f}, setting{0, 1.0f, 0.5f}, setting{5, 1.0f, 1.0f},
                          setting{0, 0.6f, 1.0f}, setting{8, 0.8f, 1.5f}}) {
    decode_options o;
    o.max_len = 1, o.sampling_topk = s.k, o.sampling_topp = s.p, o.sampling_temperature = s.temperature, o.seed = 7;
    const auto results = m.translate(std::vector<sentence>(draws, source), o);
    std::vector<double> seen(logits.size(), 0.0);
    for (const auto& r : results)
      seen[std::size_t(r[0].tokens.at(0))] += 1.0 / draws;
    const std::vector<double> want = truncated(logits, s.temperature, s.k, s.p);
    // The expected total variation of `draws` exact draws is sum_v sqrt(p_v (1 -
    // p_v) / (2 pi draws)); the bound is 3x it. The distribution one step off
    // (untruncated, or at another temperature) must be farther than the bound.
    double expected_tv = 0;
    for (double p : want)
      expected_tv += std::sqrt(p * (1 - p) / (2 * M_PI * draws));
    const bool whole = s.k == 0 && s.p == 1;
    const double tv = total_variation(seen, want),
                 off = total_variation(want, whole ? truncated(logits, s.temperature == 1 ? 0.5 : 1.0, 0, 1.0)
                                                   : truncated(logits, s.temperature, 0, 1.0));
    INFO("k " << s.k << ", p " << s.p << ", T " << s.temperature << ": TV " << tv << ", bound " << 3 * expected_tv
              << ", a wrong distribution's distance " << off);
    CHECK(tv <= 3 * expected_tv);
    CHECK(off > 3 * expected_tv);
    for (std::size_t v = 0; v < want.size(); ++v)
      if (want[v] == 0)
        CHECK(seen[v] == 0); // never a token the truncation drops
  }
}

TEST_CASE("a seed repeats its samples bitwise in any batch size and thread count", "[decode_options][sampling]") {
  const std::vector<sentence> sources{source, {4, 8, 2}, {12, 3, 19, 6, 2}, source};
  decode_options o;
  o.max_len = 14, o.sampling_topk = 0, o.sampling_temperature = 1.3f, o.seed = 42;
  std::vector<std::vector<sentence>> runs;
  for (const auto& [threads, max_batch] : std::vector<std::pair<int, int>>{{0, 64}, {1, 1}, {2, 3}}) {
    Model m = tiny(threads, max_batch);
    std::vector<sentence> out;
    for (const auto& r : m.translate(sources, o))
      out.push_back(r[0].tokens);
    runs.push_back(out);
  }
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
  CHECK(runs[0][0] != runs[0][3]); // the same source at another index draws anew
  Model m = tiny();
  decode_options other = o;
  other.seed = 43;
  int differ = 0;
  const auto b = m.translate(sources, other);
  for (std::size_t i = 0; i < sources.size(); ++i)
    differ += b[i][0].tokens != runs[0][i];
  CHECK(differ > 0);
  decode_options cold = o; // a near-zero temperature samples the greedy choice
  cold.sampling_temperature = 1e-4f;
  decode_options greedy;
  greedy.max_len = o.max_len;
  CHECK(m.translate(sources, cold)[0][0].tokens == m.translate(sources, greedy)[0][0].tokens);
}

// The token's log-probability under the rules' penalty, normalized over the whole
// vocabulary (bans do not renormalize: the scores greedy and beam search report).
double penalized_log_prob(const std::vector<float>& logits, const sentence& h, double penalty, int token) {
  std::vector<double> l(logits.begin(), logits.end());
  for (std::size_t v = 0; v < l.size(); ++v)
    if (std::find(h.begin(), h.end(), int(v)) != h.end())
      l[v] = l[v] > 0 ? l[v] / penalty : l[v] * penalty;
  const double top = *std::max_element(l.begin(), l.end());
  double z = 0;
  for (double x : l)
    z += std::exp(x - top);
  return l[std::size_t(token)] - top - std::log(z);
}

TEST_CASE("sampling under bans and the penalty takes allowed tokens scored by their penalized log-probabilities",
          "[decode_options][sampling]") {
  Model m = tiny();
  decode_options o;
  o.max_len = 16, o.sampling_topk = 0, o.sampling_temperature = 1.2f, o.seed = 11, o.length_penalty = 0;
  o.repetition_penalty = 2.0f, o.no_repeat_ngram_size = 2, o.min_decoding_length = 6;
  const std::vector<sentence> sources{source, {4, 8, 2}, {12, 3, 19, 6, 2}};
  const auto results = m.translate(sources, o);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const sentence& h = results[i][0].tokens;
    INFO("source " << i);
    CHECK(int(h.size()) > o.min_decoding_length);
    m.begin({sources[i]});
    int previous = m.config().bos_id;
    double score = 0;
    for (std::size_t k = 0; k < h.size(); ++k) {
      const std::vector<float> logits = m.decode_step({previous});
      const sentence before(h.begin(), h.begin() + long(k));
      INFO("step " << k);
      CHECK((h[k] != m.config().eos_id || int(k) >= o.min_decoding_length));
      for (std::size_t j = 0; j + 1 < before.size(); ++j) // no repeated bigram
        CHECK(!(before[j] == before.back() && before[j + 1] == h[k]));
      score += penalized_log_prob(logits, before, o.repetition_penalty, h[k]);
      previous = h[k];
    }
    CHECK(std::abs(results[i][0].score - score) <= 1e-4 * (1 + std::abs(score)));
  }
}

TEST_CASE("the token callback sees each hypothesis' tokens in order; long sources are cut", "[decode_options]") {
  Model m = tiny();
  std::map<std::size_t, sentence> streamed;
  decode_options o;
  o.max_len = 10, o.sampling_topk = 4, o.seed = 3, o.target_prefix = {{6}, {9, 9}};
  o.on_token = [&](std::size_t i, int token) { streamed[i].push_back(token); };
  const auto results = m.translate({source, source}, o);
  CHECK(streamed[0] == results[0][0].tokens);
  CHECK(streamed[1] == results[1][0].tokens);
  decode_options cut;
  cut.max_len = 10, cut.max_input_length = 3;
  CHECK(m.translate({source}, cut)[0][0].tokens ==
        m.translate({sentence(source.begin(), source.begin() + 3)}, {.max_len = 10})[0][0].tokens);
}

TEST_CASE("bad decoding options are errors naming the option", "[decode_options][bad_input]") {
  Model m = tiny();
  const auto fails = [&](const decode_options& o) { return m.translate({source}, o); };
  decode_options o;
  o.sampling_topp = 0;
  CHECK_THROWS_WITH(fails(o), Contains("sampling_topp must be in (0, 1]"));
  o.sampling_topp = 1.5f;
  CHECK_THROWS_WITH(fails(o), Contains("sampling_topp must be in (0, 1]"));
  o = {}, o.sampling_temperature = 0;
  CHECK_THROWS_WITH(fails(o), Contains("sampling_temperature must be > 0"));
  o = {}, o.sampling_topk = 5, o.beam = 4;
  CHECK_THROWS_WITH(fails(o), Contains("takes beam 1"));
  o = {}, o.sampling_topk = -1;
  CHECK_THROWS_WITH(fails(o), Contains("sampling_topk must be >= 0"));
  o = {}, o.max_len = 4, o.target_prefix = {{3, 4, 5, 6}};
  CHECK_THROWS_WITH(fails(o), Contains("shorter than max_len"));
  o = {}, o.target_prefix = {{3, 400}};
  CHECK_THROWS_WITH(fails(o), Contains("token id 400 is outside the vocabulary"));
  o = {}, o.target_prefix = {{3, m.config().eos_id}};
  CHECK_THROWS_WITH(fails(o), Contains("cannot hold it"));
  o = {}, o.target_prefix = {{3}, {4}};
  CHECK_THROWS_WITH(fails(o), Contains("2 entries for 1 sources"));
  o = {}, o.repetition_penalty = 0;
  CHECK_THROWS_WITH(fails(o), Contains("repetition_penalty must be > 0"));
  o = {}, o.no_repeat_ngram_size = -2;
  CHECK_THROWS_WITH(fails(o), Contains("no_repeat_ngram_size must be >= 0"));
  o = {}, o.min_decoding_length = 500;
  CHECK_THROWS_WITH(fails(o), Contains("min_decoding_length must be in [0, max_len"));
  o = {}, o.max_input_length = -1;
  CHECK_THROWS_WITH(fails(o), Contains("max_input_length must be >= 0"));
  o = {}, o.beam = 2, o.on_token = [](std::size_t, int) {};
  CHECK_THROWS_WITH(fails(o), Contains("per-token callback takes beam 1"));
}
