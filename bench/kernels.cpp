// Every halformer kernel, as built into libhalformer_kernels.a (the schedules this
// machine's build uses), at Transformer-base shapes (d_model 512, 8 heads, d_ff
// 2048, vocab 32000): prefill S = 128, 512, 2048 (batch 1) and decode steps with
// batch x beam = 1, 8, 32 (one new token; attention over a 128-position cache).
// GEMM-shaped kernels are measured interleaved with oneDNN's and OpenBLAS's
// sgemm on the same GEMMs (row-major, same threads). Inputs are rotated over
// >= 64 MiB of copies so weights come from memory, as in a model. Prints JSON lines.
//   bench_kernels [--threads N] [--samples S] [--min-ms M] [--only NAME]
#include "measure.hpp"

#include "hf_all.h"

#include <CLI/CLI.hpp>
#include <HalideBuffer.h>
#include <oneapi/dnnl/dnnl.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

extern "C" {
int halide_set_num_threads(int);
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int);
}

namespace {
using fb = Halide::Runtime::Buffer<float>;
using ib = Halide::Runtime::Buffer<int32_t>;
constexpr int D = 512, H = 8, DK = 64, FF = 2048, V = 32000, CACHE = 128;

std::mt19937 rng(1);
fb random(std::vector<int> shape, float scale = 1.0f) {
  fb b(shape);
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](float& v) { v = n(rng); });
  return b;
}

struct gemm {
  int m, n, k;
};

// One kernel case: how to make a set of buffers and call the kernel on it.
struct kcase {
  std::string kernel, phase; // phase: "prefill S=128", "decode rows=8"
  double flops = 0, bytes = 0;
  bool compute_bound = false;
  std::vector<gemm> gemms; // for the sgemm baselines
  std::function<std::shared_ptr<void>()> make;
  std::function<int(void*)> call;
  std::function<std::size_t(void*)> size; // bytes one set of buffers holds
};

template <class Set, class Make, class Call> void add(std::vector<kcase>& v, kcase c, Make make, Call call) {
  c.make = [make] { return std::shared_ptr<void>(new Set(make()), [](void* p) { delete static_cast<Set*>(p); }); };
  c.call = [call](void* p) { return call(*static_cast<Set*>(p)); };
  c.size = [](void* p) { return static_cast<Set*>(p)->size(); };
  v.push_back(std::move(c));
}

struct proj_set {
  fb x, w[3], b[3], o[3];
  std::size_t size() const {
    std::size_t n = x.size_in_bytes();
    for (int i = 0; i < 3; ++i)
      n += w[i].data() ? w[i].size_in_bytes() + b[i].size_in_bytes() + o[i].size_in_bytes() : 0;
    return n;
  }
};
struct attn_set {
  fb q, k, v, out;
  ib len;
  std::size_t size() const { return q.size_in_bytes() + k.size_in_bytes() + v.size_in_bytes() + out.size_in_bytes(); }
};
struct gen_set {
  std::vector<fb> f;
  ib i;
  std::size_t size() const {
    std::size_t n = i.data() ? i.size_in_bytes() : 0;
    for (const auto& b : f)
      n += b.size_in_bytes();
    return n;
  }
};

std::vector<kcase> cases() {
  std::vector<kcase> v;
  struct shape {
    std::string phase;
    int t, batch;
    bool prefill;
  };
  std::vector<shape> shapes;
  for (int s : {128, 512, 2048})
    shapes.push_back({"prefill S=" + std::to_string(s), s, 1, true});
  for (int r : {1, 8, 32})
    shapes.push_back({"decode rows=" + std::to_string(r), 1, r, false});
  const float ws = 1.0f / std::sqrt(float(D));
  for (const auto& s : shapes) {
    const int rows = s.t * s.batch;
    const double act = 4.0 * D * rows;
    // Head projections: q/k/v (self-attention), k/v (cross, prefill), q (cross, decode).
    for (int n : {3, 2, 1}) {
      if ((n == 2 && !s.prefill) || (n == 1 && s.prefill))
        continue;
      const std::string name = n == 3 ? "qkv_projection" : n == 2 ? "kv_projection" : "q_projection";
      kcase c{name, s.phase, 2.0 * n * D * D * rows, n * (4.0 * D * D + act) + act, s.prefill};
      for (int i = 0; i < n; ++i)
        c.gemms.push_back({rows, D, D});
      add<proj_set>(
          v, c,
          [=] {
            proj_set p;
            p.x = random({D, s.t, s.batch});
            for (int i = 0; i < n; ++i)
              p.w[i] = random({DK, H, D}, ws), p.b[i] = random({DK, H}, 0.1f), p.o[i] = fb(DK, s.t, H, s.batch);
            return p;
          },
          [n](proj_set& p) {
            if (n == 3)
              return hf_qkv_projection(p.x, p.w[0], p.w[1], p.w[2], p.b[0], p.b[1], p.b[2], p.o[0], p.o[1], p.o[2]);
            if (n == 2)
              return hf_kv_projection(p.x, p.w[0], p.w[1], p.b[0], p.b[1], p.o[0], p.o[1]);
            return hf_q_projection(p.x, p.w[0], p.b[0], p.o[0]);
          });
    }
    // Attention: prefill is encoder self-attention (S x S); decode one query
    // against a 128-position cache.
    {
      const int tk = s.prefill ? s.t : CACHE;
      kcase c{"attention", s.phase, 4.0 * s.t * tk * DK * H * s.batch, 4.0 * DK * H * s.batch * (2.0 * s.t + 2.0 * tk),
              s.prefill};
      add<attn_set>(
          v, c,
          [=] {
            attn_set a{random({DK, s.t, H, s.batch}), random({DK, tk, H, s.batch}), random({DK, tk, H, s.batch}),
                       fb(DK, s.t, H, s.batch), ib(s.batch)};
            a.len.fill(tk);
            return a;
          },
          [](attn_set& a) { return hf_attention(a.q, a.k, a.v, a.len, false, 0, a.out); });
    }
    // Output projection (+ bias + residual), FFN, LayerNorms.
    {
      kcase c{"out_projection", s.phase, 2.0 * D * D * rows, 4.0 * D * D + 3 * act, s.prefill, {{rows, D, D}}};
      add<gen_set>(
          v, c,
          [=] {
            return gen_set{{random({DK, s.t, H, s.batch}), random({D, DK, H}, ws), random({D}, 0.1f),
                            random({D, s.t, s.batch}), fb(D, s.t, s.batch)},
                           ib()};
          },
          [](gen_set& g) { return hf_out_projection(g.f[0], g.f[1], g.f[2], g.f[3], g.f[4]); });
    }
    {
      kcase c{
          "ffn_relu", s.phase, 4.0 * D * FF * rows, 8.0 * D * FF + 3 * act, s.prefill, {{rows, FF, D}, {rows, D, FF}}};
      add<gen_set>(
          v, c,
          [=] {
            return gen_set{{random({D, s.t, s.batch}), random({D, s.t, s.batch}), random({FF, D}, ws),
                            random({FF}, 0.1f), random({D, FF}, 1.0f / std::sqrt(float(FF))), random({D}, 0.1f),
                            fb(D, s.t, s.batch)},
                           ib()};
          },
          [](gen_set& g) { return hf_ffn_relu(g.f[0], g.f[1], g.f[2], g.f[3], g.f[4], g.f[5], g.f[6]); });
    }
    for (bool residual : {false, true}) {
      kcase c{residual ? "add_layernorm" : "layernorm", s.phase, 8.0 * D * rows, (residual ? 3 : 2) * act, false};
      add<gen_set>(
          v, c,
          [=] {
            gen_set g{
                {random({D, s.t, s.batch}), random({D, s.t, s.batch}), random({D}), random({D}), fb(D, s.t, s.batch)},
                ib()};
            return g;
          },
          [residual](gen_set& g) {
            return residual ? hf_add_layernorm(g.f[0], g.f[1], g.f[2], g.f[3], 1e-5f, g.f[4])
                            : hf_layernorm(g.f[0], g.f[2], g.f[3], 1e-5f, g.f[4]);
          });
    }
    {
      kcase c{"embedding", s.phase, 2.0 * D * rows, 2 * act, false};
      add<gen_set>(
          v, c,
          [=] {
            gen_set g{{random({D, V}), fb(D, s.t, s.batch)}, ib(s.t, s.batch)};
            std::uniform_int_distribution<int> id(0, V - 1);
            g.i.for_each_value([&](int32_t& x) { x = id(rng); });
            return g;
          },
          [](gen_set& g) { return hf_embedding(g.f[0], g.i, 22.6f, 0, g.f[1]); });
    }
    // Logits over the 32000-word vocabulary (decode, and prefill up to S = 512),
    // and the log-softmax beam search runs on them (decode).
    if (!s.prefill || s.t <= 512) {
      kcase c{"logits", s.phase, 2.0 * D * V * rows, 4.0 * D * V + act + 4.0 * V * rows, s.prefill, {{rows, V, D}}};
      add<gen_set>(
          v, c,
          [=] {
            return gen_set{{random({D, s.t, s.batch}), random({V, D}, ws), random({V}), fb(V, s.t, s.batch)}, ib()};
          },
          [](gen_set& g) { return hf_logits(g.f[0], g.f[1], g.f[2], g.f[3]); });
    }
    // The standalone softmax over keys (S x S scores at prefill, a 128-key row per
    // decode row), and greedy decoding's pick over the vocabulary (decode).
    {
      const int n = s.prefill ? s.t : CACHE;
      kcase c{"softmax", s.phase, 4.0 * n * rows, 8.0 * n * rows, false};
      add<gen_set>(
          v, c,
          [=] {
            gen_set g{{random({n, s.t, s.batch}, 3.0f), fb(n, s.t, s.batch)}, ib(s.batch)};
            g.i.fill(n);
            return g;
          },
          [](gen_set& g) { return hf_softmax(g.f[0], g.i, false, 0, g.f[1]); });
    }
    if (!s.prefill) {
      kcase c{"greedy_pick", s.phase, 4.0 * V * rows, 4.0 * V * rows, false};
      add<gen_set>(
          v, c,
          [=] {
            return gen_set{{random({V, 1, s.batch}, 3.0f), fb(1, s.batch)}, ib(1, s.batch)};
          },
          [](gen_set& g) { return hf_greedy_pick(g.f[0], g.i, g.f[1]); });
    }
    if (!s.prefill) {
      kcase c{"log_softmax", s.phase, 4.0 * V * rows, 8.0 * V * rows, false};
      add<gen_set>(
          v, c,
          [=] {
            gen_set g{{random({V, 1, s.batch}, 3.0f), fb(V, 1, s.batch)}, ib(s.batch)};
            g.i.fill(V);
            return g;
          },
          [](gen_set& g) { return hf_log_softmax(g.f[0], g.i, false, 0, g.f[1]); });
    }
  }
  return v;
}

// The sgemm baselines on the same GEMMs, inputs rotated like the kernel's.
struct sgemm_sets {
  std::vector<std::vector<float>> data;
  std::size_t next = 0;
  explicit sgemm_sets(const std::vector<gemm>& gs) {
    std::size_t per = 0;
    for (const auto& g : gs)
      per += std::size_t(g.m) * g.k + std::size_t(g.k) * g.n + std::size_t(g.m) * g.n;
    const std::size_t n = std::clamp<std::size_t>((64u << 20) / (per * 4) + 1, 1, 16);
    std::normal_distribution<float> d;
    for (std::size_t i = 0; i < n; ++i) {
      data.emplace_back(per);
      for (auto& x : data.back())
        x = d(rng);
    }
  }
  template <class F> void run(const std::vector<gemm>& gs, F sgemm) {
    float* p = data[next++ % data.size()].data();
    for (const auto& g : gs) {
      float *a = p, *b = a + std::size_t(g.m) * g.k, *c = b + std::size_t(g.k) * g.n;
      sgemm(g, a, b, c);
      p = c + std::size_t(g.m) * g.n;
    }
  }
};
} // namespace

int main(int argc, char** argv) {
  int threads = int(std::thread::hardware_concurrency()), samples = 7;
  double min_ms = 20;
  std::string only;
  CLI::App app{"bench_kernels: every kernel vs oneDNN/OpenBLAS sgemm (JSON lines on stdout)"};
  app.add_option("--threads", threads)->check(CLI::Range(1, 1024));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  app.add_option("--min-ms", min_ms, "minimum time per sample")->check(CLI::Range(0.1, 10000.0));
  app.add_option("--only", only, "one kernel");
  CLI11_PARSE(app, argc, argv);
  if (halformer_kernels_init() != 0) {
    std::fprintf(stderr, "%s\n", halformer_last_error());
    return 2;
  }
  halide_set_num_threads(threads);
  openblas_set_num_threads(threads);
  // oneDNN's sgemm threads come from OpenMP: OMP_NUM_THREADS (bench/run.py sets it).
  for (const kcase& c : cases()) {
    if (!only.empty() && c.kernel != only)
      continue;
    std::vector<std::shared_ptr<void>> sets{c.make()};
    // Rotation: as many copies as make >= 64 MiB (bytes is what one call touches).
    // Up to 4096 copies (small memory-bound kernels must not run from the caches
    // either) and 1 GiB in all (an embedding table is 64 MiB, of which a call
    // touches a few rows).
    const std::size_t set_size = std::max<std::size_t>(c.size(sets[0].get()), 1);
    const std::size_t n =
        std::clamp<std::size_t>(std::size_t((64 << 20) / std::max(c.bytes, 1.0)) + 1, 1,
                                std::max<std::size_t>(1, std::min<std::size_t>(4096, (1u << 30) / set_size)));
    while (sets.size() < n)
      sets.push_back(c.make());
    std::size_t next = 0;
    int rc = 0;
    std::vector<std::function<void()>> fns{[&] { rc |= c.call(sets[next++ % sets.size()].get()); }};
    std::unique_ptr<sgemm_sets> blas;
    if (!c.gemms.empty()) {
      blas = std::make_unique<sgemm_sets>(c.gemms);
      fns.push_back([&] {
        blas->run(c.gemms, [](const gemm& g, float* a, float* b, float* o) {
          dnnl_sgemm('N', 'N', g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, o, g.n);
        });
      });
      fns.push_back([&] {
        blas->run(c.gemms, [](const gemm& g, float* a, float* b, float* o) {
          cblas_sgemm(101, 111, 111, g.m, g.n, g.k, 1.0f, a, g.k, b, g.n, 0.0f, o, g.n);
        });
      });
    }
    const auto st = bench::interleaved(fns, samples, min_ms);
    if (rc != 0) {
      std::fprintf(stderr, "bench_kernels: %s %s failed: %s\n", c.kernel.c_str(), c.phase.c_str(),
                   halformer_last_error());
      return 1;
    }
    nlohmann::json j{{"kernel", c.kernel},
                     {"phase", c.phase},
                     {"flops", c.flops},
                     {"bytes", c.bytes},
                     {"compute_bound", c.compute_bound},
                     {"halformer", st[0].to_json()},
                     {"input_sets", sets.size()},
                     {"isa", halformer_active_isa()}};
    if (!c.gemms.empty())
      j["onednn_sgemm"] = st[1].to_json(), j["openblas_sgemm"] = st[2].to_json();
    std::printf("%s\n", j.dump().c_str());
    std::fflush(stdout);
  }
}
