// Machine limits: the FP32 FMA peak (an FMA-chain microbenchmark, AVX-512 and
// AVX2), memory bandwidth (STREAM-style triad and a read-only sum over arrays far
// larger than the caches), with `--threads` threads. Prints JSON.
#include "halformer/timing.hpp"

#include "compare.hpp" // fma_peak_gflops

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {
// Runs body(begin, end) over [0, n) split across `threads` threads.
template <class F> void parallel(int threads, std::size_t n, F body) {
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] { body(n * i / threads, n * (i + 1) / threads); });
  for (auto& t : pool)
    t.join();
}
} // namespace

int main(int argc, char** argv) {
  int threads = int(std::thread::hardware_concurrency()), samples = 7;
  CLI::App app{"bench_limits: FMA peak and memory bandwidth (JSON on stdout)"};
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  nlohmann::json j;
  j["threads"] = threads;
  // The peak of each ISA this CPU has (an ISA it lacks is null, never run).
  for (const char* isa : {"avx512", "avx2"}) {
    const double peak = halformer::tuner::fma_peak_gflops(isa, threads);
    j["fma_peak_gflops"][isa] = peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
  }
  // 3 x 128 MiB: far beyond any L3 here.
  const std::size_t n = std::size_t(32) << 20;
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  parallel(threads, n, [&](std::size_t lo, std::size_t hi) { // first touch by the threads that use them
    for (std::size_t i = lo; i < hi; ++i)
      a[i] = 0, b[i] = 1, c[i] = 2;
  });
  std::vector<double> partial(std::size_t(threads) * 16);
  auto triad = [&] {
    parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i)
        a[i] = b[i] + 3.0f * c[i];
    });
  };
  auto read = [&] {
    parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (std::size_t i = lo; i + 3 < hi; i += 4)
        s0 += b[i], s1 += b[i + 1], s2 += b[i + 2], s3 += b[i + 3];
      partial[(lo * threads / n) * 16] = s0 + s1 + s2 + s3;
    });
  };
  const auto s = halformer::timing::interleaved({triad, read}, samples, 50);
  const double triad_bytes = 3.0 * 4 * n, read_bytes = 4.0 * n;
  j["bandwidth_gbps"] = {{"triad", triad_bytes / s[0].median_ms / 1e6}, {"read", read_bytes / s[1].median_ms / 1e6}};
  j["bandwidth_ms"] = {{"triad", s[0].to_json()}, {"read", s[1].to_json()}};
  std::printf("%s\n", j.dump().c_str());
}
