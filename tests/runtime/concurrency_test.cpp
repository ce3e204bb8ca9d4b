// One loaded Model serving several threads: concurrent translate() and forward()
// calls (each with its own executor) give exactly what the same calls give one
// after another; and the loader's threads give what one gives.
#include "fixtures.hpp"
#include "halformer_kernels.h"
#include "safetensors.hpp"
#include "weights.hpp"

#include <catch2/catch.hpp>

#include <cstring>
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

namespace {
// Same type, extents and element bytes (padding between rows not compared).
bool same_values(const halformer::weight_buffer& a, const halformer::weight_buffer& b) {
  if (a.type() != b.type() || a.dimensions() != b.dimensions())
    return false;
  for (int d = 0; d < a.dimensions(); ++d)
    if (a.dim(d).min() != b.dim(d).min() || a.dim(d).extent() != b.dim(d).extent())
      return false;
  bool same = true;
  a.for_each_element([&](const int* pos) {
    same = same && std::memcmp(a.raw_buffer()->address_of(pos), b.raw_buffer()->address_of(pos),
                               std::size_t(a.type().bytes())) == 0;
  });
  return same;
}
} // namespace

// The loader repacks the layers on several threads: every tensor the same, byte
// for byte, as on one (each layer's buffers are its own), in every weight type.
TEST_CASE("weights load the same on one thread and on several", "[concurrency]") {
  const std::string d = fixtures::dir("post_ln_gelu_deep");
  const auto config = halformer::model_config::load(d + "/config.json", nullptr);
  const halformer::safetensors_file file(d + "/model.safetensors");
  using halformer::gemm_weights;
  for (gemm_weights type : {gemm_weights::float32, gemm_weights::int8, gemm_weights::bfloat16}) {
    // The loader's threads are the kernels' pool's.
    REQUIRE(halformer_set_num_threads(1) == 0);
    const auto one = halformer::model_weights::load(file, config, type);
    REQUIRE(halformer_set_num_threads(3) == 0);
    const auto several = halformer::model_weights::load(file, config, type);
    REQUIRE(halformer_set_num_threads(0) == 0); // all cores, as the other tests run
    auto same_tensors = [](const halformer::layer_tensors& a, const halformer::layer_tensors& b) {
      if (a.size() != b.size())
        return false;
      for (const auto& [name, buffer] : a) {
        const auto it = b.find(name);
        if (it == b.end() || !same_values(buffer, it->second))
          return false;
      }
      return true;
    };
    CHECK(same_tensors(one.top, several.top));
    REQUIRE(one.encoder.size() == several.encoder.size());
    REQUIRE(one.decoder.size() == several.decoder.size());
    REQUIRE(one.encoder.size() + one.decoder.size() >= 4); // more layers than threads
    for (std::size_t l = 0; l < one.encoder.size(); ++l)
      CHECK(same_tensors(one.encoder[l], several.encoder[l]));
    for (std::size_t l = 0; l < one.decoder.size(); ++l)
      CHECK(same_tensors(one.decoder[l], several.decoder[l]));
  }
}
