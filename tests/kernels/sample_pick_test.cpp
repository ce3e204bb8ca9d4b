// sample_pick against the float64 reference (reference/sampling.hpp, which sorts
// each row; the kernel searches thresholds): at each row's draw u the kernel's
// token is one whose interval of draws in the reference holds u, within 1e-5 (the
// kernel sums the kept weights in float32, at most 32000 terms in vector lanes:
// ~1e-6 of the total; a token outside the kept set has an empty interval and fails
// by any margin), and its log-probability is within greedy_pick's tolerance.
// Options: top-k, top-p, both, temperature, neither; top-k and top-p cutting
// through runs of equal logits (the lowest ids stay); bans, penalties above and
// below 1, forced tokens, a row with every token banned; vocabularies of 1, 7,
// 333 and 32000; rows (t, batch) of (1, 5) and (3, 2).
#include "halformer/reference/sampling.hpp"
#include "support.hpp"

#include <numeric>
#include <set>

using test::Buffer;

namespace {
struct lists {
  Buffer<int32_t> banned, penalized;
};

// Each row bans and penalizes up to `rules` distinct tokens each, -1 padded (at
// least one slot: a list of none is one -1).
lists random_lists(int vocab, int T, int B, int rules) {
  lists l{Buffer<int32_t>(std::max(rules, 1), T, B), Buffer<int32_t>(std::max(rules, 1), T, B)};
  l.banned.fill(-1), l.penalized.fill(-1);
  std::vector<int> ids(static_cast<std::size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (Buffer<int32_t>* list : {&l.banned, &l.penalized}) {
        std::shuffle(ids.begin(), ids.end(), test::rng());
        const int n = std::min(vocab - (list == &l.banned ? 1 : 0), int(test::rng()() % std::uint32_t(rules + 1)));
        for (int i = 0; i < n; ++i)
          (*list)(i, t, b) = ids[std::size_t(i)];
      }
  return l;
}

std::vector<int> row_of(const Buffer<int32_t>& list, int t, int b) {
  std::vector<int> r;
  for (int i = 0; i < list.dim(0).extent(); ++i)
    r.push_back(list(i, t, b));
  return r;
}
ref::sampled_row reference(const Buffer<float>& x, const lists& l, const ref::sampling_options& o, int t, int b) {
  std::vector<double> row;
  for (int v = 0; v < x.dim(0).extent(); ++v)
    row.push_back(x(v, t, b));
  return ref::sample_row(row, row_of(l.banned, t, b), row_of(l.penalized, t, b), o);
}

struct picks {
  Buffer<int32_t> ids;
  Buffer<float> log_probs;
};
picks run(Buffer<float> x, Buffer<float> draws, Buffer<int32_t> forced, lists l, const ref::sampling_options& o) {
  const int T = x.dim(1).extent(), B = x.dim(2).extent();
  picks p{Buffer<int32_t>(T, B), Buffer<float>(T, B)};
  REQUIRE_OK(HF(sample_pick)(x, draws, forced, l.banned, l.penalized, o.top_k, float(o.top_p), float(o.temperature),
                             float(o.penalty), p.ids, p.log_probs));
  return p;
}

// The token at draw u is the reference's there, up to the sums' rounding.
void check_token(const ref::sampled_row& r, int id, float log_prob, double u) {
  INFO("draw " << u << " token " << id << " of " << r.kept.size() << " kept");
  if (r.kept.empty()) {
    CHECK(id == -1);
    return;
  }
  const auto [lo, hi] = r.draws_of(id);
  CHECK(lo - 1e-5 <= u);
  CHECK(u < hi + 1e-5);
  CHECK(test::log_prob_error(log_prob, r.log_prob(id)) <= test::rtol);
}

// Calls per case: fewer where each costs more (PoCL runs each of the kernel's
// ~100 GPU loops as a device call; the AArch64 build runs under qemu).
#if defined(HALFORMER_TEST_OPENCL) || defined(__aarch64__)
constexpr int calls = 1, sweep = 100;
#else
constexpr int calls = 3, sweep = 400;
#endif

void check_random_draws(const Buffer<float>& x, const lists& l, const ref::sampling_options& o) {
  const int T = x.dim(1).extent(), B = x.dim(2).extent();
  Buffer<int32_t> forced(T, B);
  forced.fill(-1);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int c = 0; c < calls; ++c) {
    Buffer<float> draws(T, B);
    draws.for_each_value([&](float& u) { u = std::min(uniform(test::rng()), 0.99999994f); });
    const picks p = run(x, draws, forced, l, o);
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        INFO("row t " << t << " b " << b);
        check_token(reference(x, l, o, t, b), p.ids(t, b), p.log_probs(t, b), draws(t, b));
      }
  }
}
} // namespace

TEST_CASE("sample_pick draws the reference's token under every option", "[sample_pick]") {
  const ref::sampling_options options[] = {{0, 1, 1, 1},      {10, 1, 0.7, 1.3}, {0, 0.9, 1.4, 0.8},
                                           {50, 0.8, 1, 1.2}, {1, 1, 1, 1},      {400, 0.5, 0.5, 1}};
  for (const auto& o : options) {
    INFO("top_k " << o.top_k << " top_p " << o.top_p << " temperature " << o.temperature << " penalty " << o.penalty);
    test::for_random_logits({{1, 1, 5}, {7, 3, 2}, {333, 1, 5}, {32000, 1, 2}}, [&](const Buffer<float>& x) {
      check_random_draws(x, random_lists(x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent(), 6), o);
    });
  }
}

TEST_CASE("sample_pick keeps the lowest ids of a run of equal logits", "[sample_pick]") {
  // Logits of 8 values: each run of equal ones spans the whole row.
  Buffer<float> x(333, 1, 2);
  x.for_each_element([&](int v, int, int b) { x(v, 0, b) = float((v * 7 + b) % 8) * 0.5f; });
  const lists none = random_lists(333, 1, 2, 0);
  Buffer<int32_t> forced(1, 2);
  forced.fill(-1);
  for (const ref::sampling_options& o : {ref::sampling_options{50, 1, 1, 1}, ref::sampling_options{0, 0.3, 1, 1},
                                         ref::sampling_options{100, 0.7, 0.5, 1}}) {
    INFO("top_k " << o.top_k << " top_p " << o.top_p);
    std::set<int> drawn[2];
    // draws across [0, 1): every kept token's interval is wider than 1/100 (its
    // weight over the kept total >= 0.0129; the top-p cuts are >= 0.0029 of it
    // from the reference's boundary, far above float32's sums' rounding)
    for (int i = 0; i < sweep; ++i) {
      Buffer<float> draws(1, 2);
      draws.fill((float(i) + 0.5f) / float(sweep));
      const picks p = run(x, draws, forced, none, o);
      for (int b = 0; b < 2; ++b) {
        const auto r = reference(x, none, o, 0, b);
        check_token(r, p.ids(0, b), p.log_probs(0, b), draws(0, b));
        drawn[b].insert(p.ids(0, b));
      }
    }
    for (int b = 0; b < 2; ++b) {
      const auto r = reference(x, none, o, 0, b);
      CHECK(drawn[b] == std::set<int>(r.kept.begin(), r.kept.end()));
    }
  }
}

TEST_CASE("sample_pick gives forced tokens, -1 for a row with every token banned, errors", "[sample_pick]") {
  Buffer<float> x = test::random({7, 1, 3}, 3.0f);
  lists l = random_lists(7, 1, 3, 7);
  for (int v = 0; v < 7; ++v)
    l.banned(v, 0, 2) = v; // row 2: everything banned
  Buffer<int32_t> forced(1, 3);
  forced(0, 0) = 4, forced(0, 1) = -1, forced(0, 2) = 6; // a forced token may be banned: the prefix wins
  Buffer<float> draws(1, 3);
  draws.fill(0.5f);
  const ref::sampling_options o{0, 1, 1, 1.5};
  const picks p = run(x, draws, forced, l, o);
  CHECK(p.ids(0, 0) == 4);
  CHECK(test::log_prob_error(p.log_probs(0, 0), reference(x, l, o, 0, 0).log_prob(4)) <= test::rtol);
  check_token(reference(x, l, o, 0, 1), p.ids(0, 1), p.log_probs(0, 1), 0.5);
  CHECK(p.ids(0, 2) == 6);
  forced(0, 1) = -1, forced(0, 2) = -1;
  CHECK(run(x, draws, forced, l, o).ids(0, 2) == -1);
  forced(0, 1) = 7;
  Buffer<int32_t> ids(1, 3);
  Buffer<float> lp(1, 3);
  REQUIRE_KERNEL_ERROR(HF(sample_pick)(x, draws, forced, l.banned, l.penalized, 0, 1.0f, 1.0f, 1.0f, ids, lp),
                       "outside the vocabulary");
}
