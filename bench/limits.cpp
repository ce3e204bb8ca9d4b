// Machine limits: the FP32 FMA peak (an FMA-chain microbenchmark, AVX-512 and
// AVX2), the dot-product peaks of the bfloat16 and int8 GEMMs (AVX-512's
// vdpbf16ps and vpdpbusd, AMX's tdpbf16ps and tdpbusd), memory bandwidth (STREAM-style triad and a read-only sum over
// arrays far larger than the caches), with `--threads` threads. Prints JSON.
#include "halformer/timing.hpp"

#include "halformer/machine.hpp"
#include "read_probe.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  int threads = halformer::machine::online_cpus(), samples = 7;
  CLI::App app{"bench_limits: FMA peak and memory bandwidth (JSON on stdout)"};
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  nlohmann::json j;
  j["threads"] = threads;
  j["last_level_cache_bytes"] = halformer::machine::last_level_cache_bytes();
  j["rotation_bytes"] = halformer::timing::rotation_bytes();
  // The peak of each ISA this CPU has (an ISA it lacks is null, never run).
  for (const char* isa : {"avx512", "avx2"}) {
    const double peak = halformer::machine::fma_peak_gflops(isa, threads);
    j["fma_peak_gflops"][isa] = peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
  }
  for (const char* kind : {"bf16", "int8", "amx_bf16", "amx_int8"}) {
    const double peak = halformer::machine::dot_peak_gops(kind, threads);
    j["dot_peak_gops"][kind] = peak > 0 ? nlohmann::json(peak) : nlohmann::json(nullptr);
  }
  // Each array of the triad, and the probe's read, twice the last-level cache.
  using halformer::bench::parallel;
  const std::size_t n = halformer::timing::rotation_bytes() / 4;
  std::vector<float> a(n), c(n);
  halformer::bench::read_probe read(threads, n);
  parallel(threads, n, [&](std::size_t lo, std::size_t hi) { // first touch by the threads that use them
    for (std::size_t i = lo; i < hi; ++i)
      a[i] = 0, c[i] = 2;
  });
  const float* b = read.data(); // the triad's third array
  auto triad = [&] {
    parallel(threads, n, [&](std::size_t lo, std::size_t hi) {
      for (std::size_t i = lo; i < hi; ++i)
        a[i] = b[i] + 3.0f * c[i];
    });
  };
  const auto s = halformer::timing::interleaved({triad, [&] { read(); }}, samples, 50);
  const double triad_bytes = 3.0 * 4 * n, read_bytes = read.bytes();
  j["bandwidth_gbps"] = {{"triad", triad_bytes / s[0].median_ms / 1e6}, {"read", read_bytes / s[1].median_ms / 1e6}};
  j["bandwidth_ms"] = {{"triad", s[0].to_json()}, {"read", s[1].to_json()}};
  std::printf("%s\n", j.dump().c_str());
}
