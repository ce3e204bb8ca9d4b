// One loaded Model serving several threads: concurrent translate() and forward()
// calls (each with its own executor) give exactly what the same calls give one
// after another.
#include "fixtures.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <thread>

namespace {
using halformer::decode_options;
using halformer::hypothesis;
using halformer::sentence;

std::vector<sentence> random_sources(int n, int vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<sentence> s(static_cast<std::size_t>(n));
  for (auto& row : s) {
    row.resize(1 + rng() % 12);
    for (int& id : row)
      id = 3 + int(rng() % unsigned(vocab - 3));
  }
  return s;
}

bool same(const std::vector<std::vector<hypothesis>>& a, const std::vector<std::vector<hypothesis>>& b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size())
      return false;
    for (std::size_t k = 0; k < a[i].size(); ++k)
      if (a[i][k].tokens != b[i][k].tokens || a[i][k].score != b[i][k].score)
        return false;
  }
  return true;
}
} // namespace

TEST_CASE("concurrent calls on one model give the sequential results", "[concurrency]") {
  halformer::load_options lo;
  lo.threads = 2;
  auto model = halformer::Model::load(fixtures::dir("post_ln_relu"), lo);
  const int vocab = model.config().src_vocab;
  // Per thread: its own sources and decoding options (greedy and beam, several batch sizes).
  struct job {
    std::vector<sentence> sources;
    decode_options o;
  };
  std::vector<job> jobs;
  for (int j = 0; j < 4; ++j) {
    decode_options o;
    o.beam = j % 2 ? 4 : 1, o.nbest = j % 2 ? 2 : 1, o.max_len = 12 + j;
    jobs.push_back({random_sources(3 + 2 * j, vocab, unsigned(j)), o});
  }
  std::vector<std::vector<std::vector<hypothesis>>> sequential;
  for (const auto& j : jobs)
    sequential.push_back(model.translate(j.sources, j.o));
  std::vector<float> forward_sequential;
  const std::vector<sentence> src{{5, 6, 7, 8}, {9, 10, 11, 12}}, tgt{{1, 4, 5}, {1, 6, 7}};
  model.forward(src, tgt, forward_sequential);

  std::vector<std::vector<std::vector<hypothesis>>> concurrent(jobs.size());
  std::vector<std::vector<float>> forward_concurrent(2);
  std::vector<std::string> errors(jobs.size() + 2);
  std::vector<std::thread> threads;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    threads.emplace_back([&, j] {
      try {
        for (int repeat = 0; repeat < 3; ++repeat) // overlapping calls, some on reused executors
          concurrent[j] = model.translate(jobs[j].sources, jobs[j].o);
      } catch (const std::exception& e) {
        errors[j] = e.what();
      }
    });
  for (std::size_t f = 0; f < 2; ++f)
    threads.emplace_back([&, f] {
      try {
        model.forward(src, tgt, forward_concurrent[f]);
      } catch (const std::exception& e) {
        errors[jobs.size() + f] = e.what();
      }
    });
  for (auto& t : threads)
    t.join();
  for (const auto& e : errors)
    CHECK(e.empty());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    INFO("job " << j << " (beam " << jobs[j].o.beam << ")");
    CHECK(same(concurrent[j], sequential[j]));
  }
  for (const auto& f : forward_concurrent)
    CHECK(f == forward_sequential);
}
