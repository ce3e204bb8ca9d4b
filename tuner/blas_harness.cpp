// The BLAS baselines of `halformer compare`: the same GEMMs a GEMM-shaped kernel
// performs (e.g. FFN: x.W1 then h.W2), with OpenBLAS sgemm; with --int8
// oneDNN's int8 GEMM (dnnl_gemm_u8s8s32: u8 activations x s8 weights, exact
// int32 sums; the baseline of the *_int8 kernels, without their quantization and
// dequantization); with --matmul TYPE oneDNN's matmul primitive of that type
// (f32, u8s8s32, bf16: halformer/onednn_matmul.hpp, weights in its own layout),
// measured like the kernels (warm-up, samples of at least --min-ms, weights
// rotated over timing::rotation_bytes() and the activations in cache:
// halformer/gemm_sets.hpp); --fused gives the matmul each GEMM's epilogue
// (halformer/gemm_epilogue.hpp, its text after M,N,K; the others ignore it).
//   blas_harness "M,N,K[,EPILOGUE];..." [--int8 | --matmul f32|u8s8s32|bf16 [--fused]]
//                [--threads N] [--samples S] [--min-ms M]
// Prints one JSON object (with --matmul, "impl": the implementation oneDNN ran).
#include "halformer/gemm_epilogue.hpp"
#include "halformer/gemm_sets.hpp"
#include "halformer/onednn_matmul.hpp"
#include "halformer/timing.hpp"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
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
using gemm = halformer::gemm_shape;
struct options {
  std::vector<gemm> gemms;
  int threads = 0, samples = 7;
  double min_ms = 20;
  bool int8 = false, fused = false;
  std::string matmul; // a oneDNN matmul type, or empty
};

// The command line above; false if it is not that.
bool parse(int argc, char** argv, options& o) {
  if (argc < 2)
    return false;
  std::stringstream ss(argv[1]);
  for (std::string g; std::getline(ss, g, ';');) {
    gemm x{};
    int used = 0;
    if (std::sscanf(g.c_str(), "%d,%d,%d%n", &x.m, &x.n, &x.k, &used) != 3)
      return false;
    if (g[std::size_t(used)] == ',')
      x.epilogue = halformer::gemm_epilogue_from_text(g.substr(std::size_t(used) + 1));
    else if (std::size_t(used) != g.size())
      return false;
    o.gemms.push_back(x);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--int8" || a == "--fused") {
      (a == "--int8" ? o.int8 : o.fused) = true;
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
    else if (a == "--matmul")
      o.matmul = argv[i];
    else
      return false;
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

// The peer's one call over every GEMM, and what it is; throws for an unknown --matmul type.
struct peer {
  std::function<void()> run;
  std::string impl;
};
peer make_peer(const options& o, std::mt19937& rng) {
  using namespace halformer::onednn;
  if (o.fused && o.matmul.empty())
    throw std::invalid_argument("--fused gives oneDNN's matmul the kernels' epilogues: it needs --matmul");
  if (o.matmul.empty()) {
    auto sets = std::make_shared<halformer::gemm_sets<gemm>>(o.gemms, rng);
    const bool int8 = o.int8;
    return {
        [sets, int8] { sets->run([&](const gemm& g, float* a, float* b, float* c) { run_gemm(g, int8, a, b, c); }); },
        ""};
  }
  matmul_type type = matmul_type::f32;
  if (o.matmul == "u8s8s32")
    type = matmul_type::u8s8;
  else if (o.matmul == "bf16")
    type = matmul_type::bf16;
  else if (o.matmul != "f32")
    throw std::invalid_argument("--matmul takes f32, u8s8s32 or bf16, not '" + o.matmul + "'");
  auto set = std::make_shared<matmul_set>(o.gemms, type, o.fused ? matmul_work::fused : matmul_work::bare);
  return {[set] { set->run(); }, set->impl()};
}
} // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o))
      return 2;
  } catch (const std::invalid_argument& e) { // an epilogue it does not know
    std::printf("%s\n", nlohmann::json{{"status", "error"}, {"detail", e.what()}}.dump().c_str());
    return 2;
  }
  if (o.threads > 0)
    openblas_set_num_threads(o.threads), omp_set_num_threads(o.threads);
  double flops = 0;
  for (const auto& g : o.gemms)
    flops += 2.0 * g.m * g.n * g.k;
  std::mt19937 rng(1);
  peer p;
  try {
    p = make_peer(o, rng);
  } catch (const std::exception& e) {
    std::printf("%s\n", nlohmann::json{{"status", "error"}, {"detail", e.what()}}.dump().c_str());
    return 1;
  }
  const auto t = halformer::timing::interleaved({p.run}, o.samples, o.min_ms, 3).front();
  nlohmann::json j{{"status", "ok"},
                   {"median_ms", t.median_ms},
                   {"min_ms", t.min_ms},
                   {"max_ms", t.max_ms},
                   {"gflops", flops / t.median_ms / 1e6}};
  if (!p.impl.empty())
    j["impl"] = p.impl;
  std::printf("%s\n", j.dump().c_str());
}
