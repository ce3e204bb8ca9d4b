// The BLAS baselines' operands, rotated as the kernels' arguments are
// (problems::problem::add_rotation_sets): a copy of every GEMM's B (its
// weights) per set, timing::rotation_bytes() of them in all (up to 4096 sets), so
// that they come from memory as a model's weights do, and one A and C (the step's activations),
// which stay in cache as in a model. Values are normal floats; an int8 baseline
// reads their bytes (the same rotation either way).
#pragma once

#include "halformer/timing.hpp"

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

namespace halformer {

// Gemm: any row-major m x k times k x n description with int members m, n, k.
template <class Gemm> class gemm_sets {
public:
  gemm_sets(std::vector<Gemm> gemms, std::mt19937& rng) : gemms_(std::move(gemms)) {
    std::size_t weights = 0, rows = 0;
    for (const auto& g : gemms_)
      weights += std::size_t(g.k) * g.n, rows += std::size_t(g.m) * g.k + std::size_t(g.m) * g.n;
    std::normal_distribution<float> d;
    auto fill = [&](std::vector<float>& v, std::size_t count) {
      v.resize(count);
      for (auto& x : v)
        x = d(rng);
    };
    fill(activations_, rows);
    weights_.resize(timing::rotation_copies(weights * 4));
    fill(weights_[0], weights); // the copies' values do not matter, only their addresses
    for (std::size_t s = 1; s < weights_.size(); ++s)
      weights_[s] = weights_[0];
  }
  // fn(g, a, b, c) for every GEMM, on the next set's weights; a GEMM's C lies
  // before the next one's A.
  template <class F> void run(F&& fn) {
    float *b = weights_[next_++ % weights_.size()].data(), *a = activations_.data();
    for (const auto& g : gemms_) {
      float* c = a + std::size_t(g.m) * g.k;
      fn(g, a, b, c);
      a = c + std::size_t(g.m) * g.n, b += std::size_t(g.k) * g.n;
    }
  }

private:
  std::vector<Gemm> gemms_;
  std::vector<std::vector<float>> weights_;
  std::vector<float> activations_;
  std::size_t next_ = 0;
};

} // namespace halformer
