// Every halformer kernel, as built into libhalformer_kernels.a (the schedules this
// machine's build uses), at Transformer-base shapes (d_model 512, 8 heads, d_ff
// 2048, vocab 32000): prefill S = 128, 512, 2048 (batch 1) and decode steps with
// batch x beam = 1, 8, 32 (one new token; attention over a 128-position cache,
// of float32 and of float16 keys and values);
// the int8 GEMM kernels (*_int8) at the same shapes, their bytes those of int8
// weights, and where the CPU has AVX-512 BF16 the bfloat16 ones (*_bf16).
// GEMM-shaped kernels are measured interleaved with oneDNN's matmul primitive of
// the kernel's type (float32, u8 x s8 -> s32, bfloat16 -> float32: its
// "onednn_matmul", with the implementation oneDNN picked), the same with the
// kernel's epilogue fused ("onednn_fused": bias, activation, residual, int8
// dequantization; onednn::matmul_work::fused) and oneDNN's and
// OpenBLAS's sgemm on the same GEMMs (row-major, same threads), memory-bound ones with the
// read-bandwidth probe (read_probe.hpp): "read_probe" is the bandwidth while the
// kernel ran. Weights, tables and caches are rotated over copies of
// timing::rotation_bytes() (twice the last-level cache, at least 64 MiB) so
// they come from memory, as in a model; the step's activations are shared, in
// cache as in a model (problem::add_rotation_sets), and "bytes" counts what comes
// from memory. Prints JSON lines.
//   bench_kernels [--threads N] [--samples S] [--min-ms M] [--only NAME]
#include "halformer/gemm_sets.hpp"
#include "halformer/onednn_matmul.hpp"
#include "halformer/timing.hpp"

#include "halformer/problems.hpp"
#include "halformer_kernels.h"
#include "read_probe.hpp"

#include <CLI/CLI.hpp>
#include <HalideBuffer.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

extern "C" {
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int);
}

namespace {
namespace problems = halformer::problems;
using gemm = problems::gemm_dims;

// One kernel at one phase of Transformer-base: its problem (inputs, arguments by
// name, costs, GEMMs for the baselines).
struct kcase {
  std::string kernel, phase; // phase: "prefill S=128", "decode rows=8"
  std::string shape;
  bool compute_bound;
};

// typed: the GEMM kernels' other compute types ("_int8", "_bf16").
std::vector<kcase> cases(const std::vector<std::string>& typed) {
  const std::string heads = "d_k=64,heads=8", d = "d_model=512", cache = "128", vocab = "32000";
  std::vector<kcase> v;
  auto add = [&](const std::string& k, const std::string& phase, const std::string& shape, bool compute_bound) {
    v.push_back({k, phase, shape, compute_bound});
  };
  for (int s : {128, 512, 2048}) {
    const std::string phase = "prefill S=" + std::to_string(s), rows = ",t=" + std::to_string(s) + ",batch=1";
    const std::string S = std::to_string(s);
    add("qkv_projection", phase, heads + rows, true);
    add("kv_projection", phase, heads + rows, true);
    add("attention", phase, heads + ",tk=" + S + ",causal=0" + rows, true); // encoder self-attention
    add("out_projection", phase, heads + rows, true);
    add("ffn_relu", phase, d + ",d_ff=2048" + rows, true);
    add("layernorm", phase, d + rows, false);
    add("add_layernorm", phase, d + rows, false);
    add("embedding", phase, d + ",vocab=" + vocab + rows, false);
    if (s <= 512)
      add("logits", phase, d + ",vocab=" + vocab + rows, true);
    add("softmax", phase, "n=" + S + rows, false);
    add("kv_to_float16", phase, heads + rows, false); // a source's memory keys and values
    for (const std::string& type : typed) {
      for (const std::string k : {"qkv_projection", "kv_projection", "out_projection"})
        add(k + type, phase, heads + rows, true);
      add("ffn_relu" + type, phase, d + ",d_ff=2048" + rows, true);
    }
  }
  for (int r : {1, 8, 32}) { // one new token per row, attending to a 128-position cache
    const std::string phase = "decode rows=" + std::to_string(r), rows = ",t=1,batch=" + std::to_string(r);
    add("qkv_projection", phase, heads + rows, false);
    add("q_projection", phase, heads + rows, false);
    // float32 keys and values, and float16 ones (int8 and bfloat16 models on the CPU)
    for (const std::string a : {"attention", "attention_f16kv"}) {
      add(a, phase, heads + ",tk=" + cache + ",causal=1" + rows, false);
      if (r >= 8) // beam 4: the cross-attention of r / 4 sources over their 128-token memories
        add(a, phase + " (beam 4 cross)",
            heads + ",tk=" + cache + ",causal=0,step=1,t=4,batch=" + std::to_string(r / 4), false);
    }
    add("kv_to_float16", phase, heads + rows, false); // the step's keys and values into the caches
    add("out_projection", phase, heads + rows, false);
    add("ffn_relu", phase, d + ",d_ff=2048" + rows, false);
    add("layernorm", phase, d + rows, false);
    add("add_layernorm", phase, d + rows, false);
    add("embedding", phase, d + ",vocab=" + vocab + rows, false);
    add("logits", phase, d + ",vocab=" + vocab + rows, false);
    add("softmax", phase, "n=" + cache + rows, false);
    add("greedy_pick", phase, "vocab=" + vocab + rows, false);
    add("beam_candidates", phase, "vocab=" + vocab + rows, false);
    add("sample_pick", phase, "vocab=" + vocab + rows, false); // the whole vocabulary (top-k 0)
    for (const std::string& type : typed) {
      for (const std::string k : {"qkv_projection", "q_projection", "out_projection"})
        add(k + type, phase, heads + rows, false);
      add("ffn_relu" + type, phase, d + ",d_ff=2048" + rows, false);
      add("logits" + type, phase, d + ",vocab=" + vocab + rows, false);
    }
  }
  return v;
}

// The baselines' thread pools must sleep between their calls: on a machine with
// as many cores as threads, a pool still spinning steals the cores the next
// halformer sample runs on. OpenBLAS spins for 2^28 cycles after a call (about 0.1
// s) unless OPENBLAS_THREAD_TIMEOUT says otherwise, and reads it once at load, as
// OpenMP (oneDNN's pool) reads OMP_WAIT_POLICY. So without them the process runs
// itself again with them set. Zen 5, 2 threads, decode batch 8: ffn_relu's
// median 0.56 ms (min 0.28) with spinning pools, 0.29 with sleeping ones.
void run_with_sleeping_baseline_pools(char** argv, int threads) {
  if (std::getenv("OPENBLAS_THREAD_TIMEOUT") && std::getenv("OMP_WAIT_POLICY"))
    return;
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0); // 2^4 cycles: sleep at once
  setenv("OMP_WAIT_POLICY", "passive", 0);
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "bench_kernels: cannot re-run itself (%s): baseline pools may spin between samples\n",
               std::strerror(errno));
}

// Every kernel of the library is accounted for: one the matrix does not run is
// reported as such (a new kernel shows up here until it gets its phases).
void report_unmeasured(const std::vector<kcase>& matrix, const std::string& only, bool bf16) {
  for (const halformer_kernel* k = halformer_kernels_cpu(); k->name; ++k)
    if (std::none_of(matrix.begin(), matrix.end(), [&](const kcase& c) { return c.kernel == k->name; }) &&
        (only.empty() || only == k->name)) {
      const bool lacks_bf16 = !bf16 && std::string(k->name).ends_with("_bf16");
      const char* why =
          lacks_bf16 ? "this CPU lacks AVX-512 BF16" : "no Transformer-base phase of bench_kernels runs it";
      std::printf("%s\n", nlohmann::json{{"kernel", k->name}, {"skipped", why}}.dump().c_str());
      std::fprintf(stderr, "bench_kernels: %s is in the library but not measured: %s\n", k->name, why);
    }
}

// The kernel's problem at the case's shape, bound to the library's kernel; throws
// for a shape without a dimension the kernel needs (a --shape) or an unknown kernel.
problems::problem bound_problem(const kcase& c) {
  auto shape = problems::parse_shape(c.shape);
  problems::problem p = problems::make_problem(c.kernel, shape);
  const halformer_kernel* k = halformer_find_kernel(halformer_kernels_cpu(), c.kernel.c_str());
  if (!k)
    throw std::runtime_error(halformer_last_error());
  p.bind(*k);
  p.sets.push_back(p.make());
  p.add_rotation_sets();
  return p;
}

// One case: the kernel, the matmul and sgemm baselines on its GEMMs and the read probe,
// interleaved; one JSON line. False if the kernel failed.
bool measure_case(const kcase& c, problems::problem& p, halformer::bench::read_probe& probe, int samples,
                  double min_ms) {
  std::size_t next = 0;
  int rc = 0;
  std::vector<std::function<void()>> fns{[&] { rc |= p(p.sets[next++ % p.sets.size()]); }};
  std::unique_ptr<halformer::gemm_sets<gemm>> blas;             // the sgemm baselines on the same GEMMs
  std::unique_ptr<halformer::onednn::matmul_set> matmul, fused; // oneDNN's matmul of the kernel's type, bare and fused
  if (!p.gemms.empty()) {
    namespace dnn = halformer::onednn;
    matmul = std::make_unique<dnn::matmul_set>(p.gemms, dnn::matmul_type_of(c.kernel));
    fused = std::make_unique<dnn::matmul_set>(p.gemms, dnn::matmul_type_of(c.kernel), dnn::matmul_work::fused);
    fns.push_back([&] { matmul->run(); });
    fns.push_back([&] { fused->run(); });
    blas = std::make_unique<halformer::gemm_sets<gemm>>(p.gemms, problems::rng);
    fns.push_back([&] {
      blas->run([](const gemm& g, float* a, float* b, float* o) {
        dnnl_sgemm('N', 'N', g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, o, g.n);
      });
    });
    fns.push_back([&] {
      blas->run([](const gemm& g, float* a, float* b, float* o) {
        cblas_sgemm(101, 111, 111, g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, o, g.n);
      });
    });
  }
  if (!c.compute_bound)
    fns.push_back([&] { probe(); });
  const auto st = halformer::timing::interleaved(fns, samples, min_ms);
  if (rc != 0)
    return false;
  nlohmann::json j{{"kernel", c.kernel},
                   {"phase", c.phase},
                   {"shape", c.shape},
                   {"flops", p.flops},
                   {"bytes", p.bytes},
                   {"activation_bytes", p.set_bytes().second},
                   {"compute_bound", c.compute_bound},
                   {"halformer", st[0].to_json()},
                   {"input_sets", p.sets.size()},
                   {"isa", halformer_active_isa()}};
  if (!p.gemms.empty()) {
    j["onednn_matmul"] = st[1].to_json();
    j["onednn_matmul"]["type"] = halformer::onednn::to_string(halformer::onednn::matmul_type_of(c.kernel));
    j["onednn_matmul"]["impl"] = matmul->impl();
    j["onednn_fused"] = st[2].to_json();
    j["onednn_fused"]["impl"] = fused->impl();
    j["onednn_sgemm"] = st[3].to_json(), j["openblas_sgemm"] = st[4].to_json();
  }
  if (!c.compute_bound) {
    j["read_probe"] = st.back().to_json();
    j["read_probe"]["gbps"] = probe.bytes() / st.back().median_ms / 1e6;
  }
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  return true;
}

} // namespace

int main(int argc, char** argv) {
  int threads = halformer::machine::online_cpus(), samples = 7;
  double min_ms = 20;
  std::string only, shape;
  CLI::App app{"bench_kernels: every kernel vs oneDNN matmul and oneDNN/OpenBLAS sgemm (JSON lines on stdout)"};
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  app.add_option("--min-ms", min_ms, "minimum time per sample")->check(CLI::Range(0.1, 10000.0));
  app.add_option("--only", only, "one kernel");
  app.add_option("--shape", shape,
                 "with --only: that kernel at this shape alone (e.g. d_k=64,heads=8,tk=40,causal=0,t=1,batch=32)")
      ->needs("--only");
  CLI11_PARSE(app, argc, argv);
  run_with_sleeping_baseline_pools(argv, threads);
  if (halformer_kernels_init() != 0) {
    std::fprintf(stderr, "%s\n", halformer_last_error());
    return 2;
  }
  halformer_set_num_threads(threads);
  openblas_set_num_threads(threads);
  halformer::bench::read_probe probe(threads);
  // oneDNN's sgemm threads come from OpenMP: OMP_NUM_THREADS (set above unless given).
  problems::rng.seed(1);
  // bfloat16 kernels without AVX-512 BF16 run emulated code no model runs.
  const bool bf16 = halformer_cpu_supports("avx512_vnni");
  const auto matrix = shape.empty()
                          ? cases(bf16 ? std::vector<std::string>{"_int8", "_bf16"} : std::vector<std::string>{"_int8"})
                          : std::vector<kcase>{{only, "shape " + shape, shape, false}};
  report_unmeasured(matrix, only, bf16);
  for (const kcase& c : matrix) {
    if (!only.empty() && c.kernel != only)
      continue;
    problems::problem p;
    try {
      p = bound_problem(c);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_kernels: %s at '%s': %s\n", c.kernel.c_str(), c.shape.c_str(), e.what());
      return 1;
    }
    if (!measure_case(c, p, probe, samples, min_ms)) {
      std::fprintf(stderr, "bench_kernels: %s %s failed: %s\n", c.kernel.c_str(), c.phase.c_str(),
                   halformer_last_error());
      return 1;
    }
  }
}
