// The BLAS baseline of `halformer compare`: the same GEMMs a GEMM-shaped kernel
// performs (e.g. FFN: x.W1 then h.W2), with OpenBLAS sgemm, or with --int8
// oneDNN's int8 GEMM (dnnl_gemm_u8s8s32: u8 activations x s8 weights, exact
// int32 sums; the baseline of the *_int8 kernels, without their quantization and
// dequantization), measured like the kernels (warm-up, samples of at least
// --min-ms, weights rotated over timing::rotation_bytes() and the activations in cache:
// halformer/gemm_sets.hpp).
//   blas_harness "M,N,K;M,N,K..." [--int8] [--threads N] [--samples S] [--min-ms M]
// Prints one JSON object.
#include "halformer/gemm_sets.hpp"
#include "halformer/timing.hpp"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int);
}
enum { RowMajor = 101, NoTrans = 111 };
static const int32_t zero_offset = 0;

namespace {
struct gemm {
  int m, n, k;
};
struct options {
  std::vector<gemm> gemms;
  int threads = 0, samples = 7;
  double min_ms = 20;
  bool int8 = false;
};

// The command line above; false if it is not that.
bool parse(int argc, char** argv, options& o) {
  if (argc < 2)
    return false;
  std::stringstream ss(argv[1]);
  for (std::string g; std::getline(ss, g, ';');) {
    gemm x{};
    if (std::sscanf(g.c_str(), "%d,%d,%d", &x.m, &x.n, &x.k) != 3)
      return false;
    o.gemms.push_back(x);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--int8") {
      o.int8 = true;
      continue;
    }
    if (i + 1 == argc)
      return false;
    ++i;
    if (a == "--threads")
      o.threads = std::stoi(argv[i]);
    else if (a == "--samples")
      o.samples = std::stoi(argv[i]);
    else if (a == "--min-ms")
      o.min_ms = std::stod(argv[i]);
  }
  return true;
}

void run_gemm(const gemm& g, bool int8, float* a, float* b, float* c) {
  if (int8)
    dnnl_gemm_u8s8s32('N', 'N', 'F', g.m, g.n, g.k, 1.0f, reinterpret_cast<const uint8_t*>(a), g.k, 0,
                      reinterpret_cast<const int8_t*>(b), g.n, 0, 0.0f, reinterpret_cast<int32_t*>(c), g.n,
                      &zero_offset);
  else
    cblas_sgemm(RowMajor, NoTrans, NoTrans, g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, c, g.n);
}
} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o))
    return 2;
  if (o.threads > 0)
    openblas_set_num_threads(o.threads), omp_set_num_threads(o.threads);
  double flops = 0;
  for (const auto& g : o.gemms)
    flops += 2.0 * g.m * g.n * g.k;
  std::mt19937 rng(1);
  halformer::gemm_sets<gemm> sets(o.gemms, rng);
  const auto run = [&] {
    sets.run([&](const gemm& g, float* a, float* b, float* c) { run_gemm(g, o.int8, a, b, c); });
  };
  const auto t = halformer::timing::interleaved({run}, o.samples, o.min_ms, 3).front();
  std::printf("{\"status\": \"ok\", \"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, \"gflops\": %.4g}\n",
              t.median_ms, t.min_ms, t.max_ms, flops / t.median_ms / 1e6);
}
