// The read-bandwidth probe: a sum over an array far larger than any cache here,
// split across `threads` threads. bench_limits reports its bandwidth once;
// bench_kernels interleaves it sample by sample with each memory-bound kernel, so
// that a kernel's % of bandwidth compares two rates measured under the same
// neighbours (on a shared host the read bandwidth moved 12 -> 15 GB/s within an
// hour, which a once-measured limit cannot follow).
#pragma once

#include <cstddef>
#include <thread>
#include <vector>

namespace halformer::bench {

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
  // 128 MiB: far beyond any L3 here. Each thread first-touches the part it reads.
  explicit read_probe(int threads, std::size_t floats = std::size_t(32) << 20)
      : threads_(threads), data_(floats), partial_(std::size_t(threads) * 16) {
    parallel(threads_, data_.size(), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i)
        data_[i] = 1.0f;
    });
  }
  // One pass; four independent sums per thread keep the adds off the critical path.
  void operator()() {
    parallel(threads_, data_.size(), [&](std::size_t lo, std::size_t hi) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (std::size_t i = lo; i + 3 < hi; i += 4)
        s0 += data_[i], s1 += data_[i + 1], s2 += data_[i + 2], s3 += data_[i + 3];
      partial_[(lo * threads_ / data_.size()) * 16] = s0 + s1 + s2 + s3; // one cache line per thread
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
