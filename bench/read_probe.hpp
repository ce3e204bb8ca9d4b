// The read-bandwidth probe: a sum over an array of timing::rotation_bytes() (twice
// the last-level cache, at least 64 MiB), split across `threads` threads. bench_limits reports its bandwidth once;
// bench_kernels interleaves it sample by sample with each memory-bound kernel, so
// that a kernel's % of bandwidth compares two rates measured under the same
// neighbours (on a shared host the read bandwidth moved 12 -> 15 GB/s within an
// hour, which a once-measured limit cannot follow).
#pragma once

#include "halformer/timing.hpp"

#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

namespace halformer::bench {

// The sum of p[0, n) but its last n mod 32 floats, in four vector accumulators:
// the scalar sum it replaces (float adds are not reassociated, so the compiler
// keeps them scalar) read ~12% below an AVX2 sum on a Zen 3 (interleaved, two
// threads: 17.5-18.6 against 19.7-20.8 GB/s). GCC's vector extensions compile to
// AVX2 where the CPU has it (a clone chosen at load time) and to SSE2 elsewhere
// (any x86-64; there no faster than the scalar sum).
using float8 = float __attribute__((vector_size(32)));
__attribute__((target_clones("avx2", "default"))) inline float sum_floats(const float* p, std::size_t n) {
  float8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    float8 x0, x1, x2, x3;
    std::memcpy(&x0, p + i, sizeof x0), std::memcpy(&x1, p + i + 8, sizeof x1);
    std::memcpy(&x2, p + i + 16, sizeof x2), std::memcpy(&x3, p + i + 24, sizeof x3);
    a0 += x0, a1 += x1, a2 += x2, a3 += x3;
  }
  const float8 s = (a0 + a1) + (a2 + a3);
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// Runs body(begin, end) over [0, n) split evenly across `threads` threads.
template <class F> void parallel(int threads, std::size_t n, F body) {
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] { body(n * i / threads, n * (i + 1) / threads); });
  for (auto& t : pool)
    t.join();
}

class read_probe {
public:
  // Each thread first-touches the part it reads.
  explicit read_probe(int threads, std::size_t floats = timing::rotation_bytes() / 4)
      : threads_(threads), data_(floats), partial_(std::size_t(threads) * 16) {
    parallel(threads_, data_.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i)
        data_[i] = 1.0f;
    });
  }
  // One pass, each thread over its part (at most 124 bytes a thread left unread:
  // sum_floats's tail).
  void operator()() {
    parallel(threads_, data_.size(), [&](std::size_t lo, std::size_t hi) {
      partial_[(lo * threads_ / data_.size()) * 16] = sum_floats(data_.data() + lo, hi - lo); // a line per thread
    });
  }
  double bytes() const { return 4.0 * double(data_.size()); }
  const float* data() const { return data_.data(); }

private:
  int threads_;
  std::vector<float> data_;
  std::vector<double> partial_;
};

} // namespace halformer::bench
