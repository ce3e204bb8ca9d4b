// The in-core rate of decode register tiles (rows x ymm vectors of accumulators)
// on this CPU, one thread, weights hot in L2, so that memory is out of the
// picture: how fast a decode GEMM's multiply-adds can run at all in each weight
// layout, against the FMA peak measured beside them.
// - rows: the weights row-major (one row per reduction index, the output features
//   contiguous), as the float32 decode GEMMs read them until they moved to
//   panels (the measurement behind that move): each tile walks a chunk of `chunk` rows, its accumulators loaded and
//   stored around every chunk;
// - panels: each tile's columns contiguous over the whole reduction (packed),
//   the accumulators in registers from the first row to the last.
// AVX2 + FMA code (the ISA every x86 target here has in common), reported as not
// run where the CPU lacks it. Prints JSON.
#include "halformer/timing.hpp"

#include "halformer/machine.hpp"

#include <CLI/CLI.hpp>
#include <immintrin.h>

#include <cstdio>
#include <vector>

namespace {

constexpr int features = 480, reduction = 256; // 480 KiB of weights: in L2; 480 = 20 x 24 = 30 x 16

struct problem {
  std::vector<float> rows, panels, x, y;
  explicit problem(int batch)
      : rows(std::size_t(features) * reduction), panels(rows.size()), x(std::size_t(batch) * reduction),
        y(std::size_t(batch) * features) {
    for (std::size_t i = 0; i < rows.size(); ++i)
      rows[i] = float(i % 7) * 0.01f;
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 5) * 0.1f;
  }
  void pack(int width) { // panels[tile][k][lane] = rows[k][tile * width + lane]
    for (int t = 0; t < features / width; ++t)
      for (int k = 0; k < reduction; ++k)
        for (int l = 0; l < width; ++l)
          panels[(std::size_t(t) * reduction + k) * width + l] = rows[std::size_t(k) * features + t * width + l];
  }
};

// y[b, :] = x[b, :] W for `R` batch rows in tiles of V vectors, reading the
// weights' reduction rows [k0, k0 + kc) of each tile at a time (kc = reduction:
// one pass) with row stride `stride` floats between reduction rows.
template <int R, int V>
__attribute__((target("avx2,fma"))) void tiles(problem& p, const float* w, int stride, int tile_step, int kc) {
  constexpr int width = 8 * V;
  for (int k0 = 0; k0 < reduction; k0 += kc)
    for (int t = 0; t < features / width; ++t) {
      __m256 acc[R][V];
      for (int i = 0; i < R; ++i)
        for (int v = 0; v < V; ++v)
          acc[i][v] = k0 ? _mm256_loadu_ps(&p.y[std::size_t(i) * features + t * width + 8 * v]) : _mm256_setzero_ps();
      const float* tile = w + std::size_t(t) * tile_step;
      for (int k = k0; k < k0 + kc; ++k) {
        __m256 wv[V];
        for (int v = 0; v < V; ++v)
          wv[v] = _mm256_loadu_ps(tile + std::size_t(k) * stride + 8 * v);
        for (int i = 0; i < R; ++i) {
          const __m256 xi = _mm256_broadcast_ss(&p.x[std::size_t(i) * reduction + k]);
          for (int v = 0; v < V; ++v)
            acc[i][v] = _mm256_fmadd_ps(xi, wv[v], acc[i][v]);
        }
      }
      for (int i = 0; i < R; ++i)
        for (int v = 0; v < V; ++v)
          _mm256_storeu_ps(&p.y[std::size_t(i) * features + t * width + 8 * v], acc[i][v]);
    }
}

struct tile_case {
  const char* name;
  int rows, vectors, chunk; // chunk 0: the packed panels
  std::function<void(problem&)> run;
};

template <int R, int V> tile_case make_case(const char* name, int chunk) {
  constexpr int width = 8 * V;
  return {name, R, V, chunk, [chunk](problem& p) {
            if (chunk)
              tiles<R, V>(p, p.rows.data(), features, width, chunk);
            else
              tiles<R, V>(p, p.panels.data(), width, width * reduction, reduction);
          }};
}

} // namespace

int main(int argc, char** argv) {
  int samples = 9;
  CLI::App app{"bench_tile_rates: decode register tiles' multiply-add rate, weights in L2 (JSON on stdout)"};
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  nlohmann::json j{{"cpu", halformer::machine::this_machine().key()},
                   {"threads", 1},
                   {"features", features},
                   {"reduction", reduction}};
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    j["not_run"] = "this CPU lacks AVX2 + FMA";
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  j["fma_peak_gflops"] = halformer::machine::fma_peak_gflops("avx2", 1);
  // The float32 decode tiles (4 x 3: the AVX2 hand default), the 6 x 16 tile of
  // BLAS kernels, and 2 x 4; row-major with the hand default's 16-row chunks.
  const std::vector<tile_case> cases{make_case<4, 3>("4x3 rows", 16), make_case<4, 3>("4x3 panels", 0),
                                     make_case<6, 2>("6x2 rows", 16), make_case<6, 2>("6x2 panels", 0),
                                     make_case<2, 4>("2x4 rows", 16), make_case<2, 4>("2x4 panels", 0)};
  std::vector<problem> problems;
  std::vector<std::function<void()>> calls;
  problems.reserve(cases.size());
  for (const auto& c : cases) {
    problems.emplace_back(c.rows);
    problems.back().pack(8 * c.vectors);
    calls.push_back([&c, &p = problems.back()] { c.run(p); });
  }
  const auto times = halformer::timing::interleaved(calls, samples, 20);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const double flops = 2.0 * cases[i].rows * features * reduction;
    j["tiles"].push_back({{"tile", cases[i].name},
                          {"gflops", flops / times[i].median_ms / 1e6},
                          {"gflops_min", flops / times[i].max_ms / 1e6},
                          {"gflops_max", flops / times[i].min_ms / 1e6},
                          {"time", times[i].to_json()}});
  }
  std::printf("%s\n", j.dump().c_str());
}
