// Runs one post-LN encoder layer of random weights through the AOT kernels
// (embedding -> qkv -> attention -> out projection -> add&norm -> FFN -> norm) and
// prints the ISA used, the output's statistics and each kernel's time. The full
// encoder-decoder with real models arrives with the runtime (see README).
#include "halformer/positions.hpp"
#include "hf_all.h"

#include <HalideBuffer.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using Halide::Runtime::Buffer;

namespace {
template <class T> Buffer<T> random_buffer(std::mt19937& rng, std::initializer_list<int> shape, float scale) {
  Buffer<T> b{std::vector<int>(shape)};
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](T& v) { v = static_cast<T>(n(rng)); });
  return b;
}
void check(int rc, const char* kernel) {
  if (rc != 0) {
    std::fprintf(stderr, "%s failed (%d): %s\n", kernel, rc, halformer_last_error());
    std::exit(1);
  }
}
template <class F> double timed(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

int main() {
  if (halformer_kernels_init() != 0) {
    std::fprintf(stderr, "%s\n", halformer_last_error());
    return 1;
  }
  const int d_model = 512, heads = 8, d_k = d_model / heads, d_ff = 2048, vocab = 1024, t = 64, batch = 2;
  std::mt19937 rng(42);
  const float w_scale = 1.0f / std::sqrt(float(d_model));
  // Weights in panels (halformer_kernels.h): (1, 16, inputs..., outputs / 16, ...)
  // for a first output dim that is a multiple of 64; random values need no packing.
  auto table = random_buffer<float>(rng, {1, 16, d_model, vocab / 16}, 1.0f);
  Buffer<int32_t> ids(t, batch);
  ids.for_each_value([&](int32_t& v) { v = int32_t(rng() % vocab); });
  Buffer<float> wq = random_buffer<float>(rng, {1, 16, d_model, d_k / 16, heads}, w_scale), wk = wq.copy(),
                wv = wq.copy();
  Buffer<float> bq(d_k, heads), bk(d_k, heads), bv(d_k, heads);
  for (auto* b : {&bq, &bk, &bv})
    b->fill(0.01f);
  auto wo = random_buffer<float>(rng, {1, 16, d_k, heads, d_model / 16}, w_scale);
  auto w1 = random_buffer<float>(rng, {1, 16, d_model, d_ff / 16}, w_scale);
  auto w2 = random_buffer<float>(rng, {1, 16, d_ff, d_model / 16}, 1.0f / std::sqrt(float(d_ff)));
  Buffer<float> bo(d_model), b1(d_ff), b2(d_model), gamma(d_model), beta(d_model);
  bo.fill(0.0f), b1.fill(0.0f), b2.fill(0.0f), gamma.fill(1.0f), beta.fill(0.0f);
  Buffer<int32_t> lengths(batch);
  lengths(0) = t, lengths(1) = t / 2;
  Buffer<int32_t> kv_rows(t, batch); // every key in its query's own row
  kv_rows.for_each_element([&](int key, int b) { kv_rows(key, b) = b; });

  Buffer<float> x(d_model, t, batch), q(d_k, t, heads, batch), k(d_k, t, heads, batch), v(d_k, t, heads, batch),
      a(d_k, t, heads, batch), y(d_model, t, batch), n1(d_model, t, batch), f(d_model, t, batch),
      out(d_model, t, batch);
  std::printf("halformer kernels demo: one encoder layer, d_model %d, %d heads, d_ff %d, %d x %d tokens, ISA %s\n",
              d_model, heads, d_ff, batch, t, halformer_active_isa());
  struct step {
    const char* name;
    double ms;
  } steps[] = {
      {"embedding", timed([&] {
         const float step = float(halformer::sinusoid_frequency_step(d_model, false));
         check(hf_embedding(table, ids, vocab, std::sqrt(float(d_model)), 0, false, step, x), "embedding");
       })},
      {"qkv_projection", timed([&] { check(hf_qkv_projection(x, wq, wk, wv, bq, bk, bv, q, k, v), "qkv"); })},
      {"attention",
       timed([&] { check(hf_attention(q, k, v, kv_rows, lengths, false, 0, false, true, a), "attention"); })},
      {"out_projection", timed([&] { check(hf_out_projection(a, wo, bo, x, y), "out_projection"); })},
      {"layernorm", timed([&] { check(hf_layernorm(y, gamma, beta, 1e-5f, n1), "layernorm"); })},
      {"ffn_relu", timed([&] { check(hf_ffn_relu(n1, n1, w1, b1, w2, b2, f), "ffn"); })},
      {"layernorm", timed([&] { check(hf_layernorm(f, gamma, beta, 1e-5f, out), "layernorm"); })},
  };
  for (const auto& s : steps)
    std::printf("  %-16s %8.3f ms (first call, cold)\n", s.name, s.ms);
  double sum = 0, sq = 0;
  out.for_each_value([&](float v) { sum += v, sq += double(v) * v; });
  const double n = double(out.number_of_elements()), mean = sum / n;
  std::printf("output: mean %.2e, std %.4f (LayerNorm output: expect ~0 and ~1)\n", mean,
              std::sqrt(sq / n - mean * mean));
  return std::isfinite(mean) && std::abs(mean) < 1e-3 && std::abs(std::sqrt(sq / n - mean * mean) - 1.0) < 1e-2 ? 0 : 1;
}
