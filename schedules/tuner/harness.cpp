// The tuner's measuring harness: one binary per candidate, linked from this file
// (compiled once per kernel with -DHF_KERNEL_<NAME>) and the candidate's static
// library, whose function is `candidate`. Run in a child process by the tuner:
//
//   harness SHAPE [--threads N] [--samples S] [--min-ms M] [--seed X] [--device opencl]
//
// With --device (a GPU schedule), inputs are uploaded before the first call and
// stay on the device; every timed call ends with halide_device_sync(), so a
// sample is the time to finished results, and the outputs are copied back to the
// host for verification.
//
// It first verifies the candidate against the float64 references of
// tests/reference on sampled rows of the output (the same references the kernel
// tests use); only a verified candidate is timed. Timing: warm-up, then S samples,
// each repeating the call over rotating copies of the inputs (together >= 64 MiB,
// so that weights come from memory as in a model, not from a hot cache) for at
// least M ms. Prints one JSON object; exit 0 measured, 3 wrong, 4 kernel error,
// 2 bad arguments.
#include "../../tests/reference/convert.hpp"

#include <HalideBuffer.h>
#include <HalideRuntime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using Halide::Runtime::Buffer;
using fb = Buffer<float>;
using ib = Buffer<int32_t>;
using hb = halide_buffer_t*;

extern "C" int halide_set_num_threads(int);

// The candidate's C signature, per kernel (the generators' Inputs then Outputs).
extern "C" {
#if defined(HF_KERNEL_EMBEDDING)
int candidate(hb table, hb ids, float scale, int32_t offset, hb out);
#elif defined(HF_KERNEL_QKV_PROJECTION)
int candidate(hb x, hb wq, hb wk, hb wv, hb bq, hb bk, hb bv, hb q, hb k, hb v);
#elif defined(HF_KERNEL_KV_PROJECTION)
int candidate(hb x, hb wk, hb wv, hb bk, hb bv, hb k, hb v);
#elif defined(HF_KERNEL_Q_PROJECTION)
int candidate(hb x, hb wq, hb bq, hb q);
#elif defined(HF_KERNEL_ATTENTION)
int candidate(hb q, hb k, hb v, hb lengths, bool causal, int32_t offset, hb out);
#elif defined(HF_KERNEL_OUT_PROJECTION)
int candidate(hb a, hb w, hb b, hb residual, hb out);
#elif defined(HF_KERNEL_FFN_RELU) || defined(HF_KERNEL_FFN_GELU)
int candidate(hb x, hb residual, hb w1, hb b1, hb w2, hb b2, hb out);
#elif defined(HF_KERNEL_LAYERNORM)
int candidate(hb x, hb gamma, hb beta, float eps, hb out);
#elif defined(HF_KERNEL_ADD_LAYERNORM)
int candidate(hb x, hb residual, hb gamma, hb beta, float eps, hb out);
#elif defined(HF_KERNEL_SOFTMAX) || defined(HF_KERNEL_LOG_SOFTMAX)
int candidate(hb x, hb lengths, bool causal, int32_t offset, hb out);
#elif defined(HF_KERNEL_LOGITS)
int candidate(hb x, hb w, hb b, hb out);
#elif defined(HF_KERNEL_GREEDY_PICK)
int candidate(hb x, hb ids, hb log_probs);
#else
#error "define HF_KERNEL_<NAME>"
#endif
}

namespace {

std::mt19937 rng;

fb random(std::vector<int> shape, float scale) {
  fb b(shape);
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](float& v) { v = n(rng); });
  return b;
}

struct shape_args {
  std::map<std::string, int> v;
  std::vector<std::string> used;
  int operator[](const std::string& k) {
    auto it = v.find(k);
    if (it == v.end())
      throw std::runtime_error("shape lacks '" + k + "'");
    used.push_back(k);
    return it->second;
  }
  void check_all_used() const {
    for (const auto& [k, x] : v)
      if (std::find(used.begin(), used.end(), k) == used.end())
        throw std::runtime_error("shape key '" + k + "' does not apply to this kernel");
  }
};

// Worst |got - want| / (|want| + rms(want)) over the compared elements.
struct error_meter {
  double worst = 0, ss = 0;
  std::size_t n = 0;
  std::vector<std::pair<double, double>> pairs;
  void add(double got, double want) {
    pairs.emplace_back(got, want);
    ss += want * want, ++n;
  }
  double result() const {
    const double rms = std::sqrt(ss / double(std::max<std::size_t>(n, 1)));
    double w = 0;
    for (auto [g, r] : pairs)
      w = std::max(w, std::isfinite(g) ? std::abs(g - r) / (std::abs(r) + rms + 1e-30) : INFINITY);
    return w;
  }
};

// One set of inputs and outputs for one call.
struct call_set {
  std::vector<fb> f;
  std::vector<ib> i;
};

// A kernel at a shape: inputs, the call, sampled float64 verification, costs.
struct problem {
  std::vector<call_set> sets;
  std::function<call_set()> make;
  std::function<int(call_set&)> call;
  std::function<void(call_set&, error_meter&)> verify;
  double flops = 0, bytes = 0;
};

// Row slices (dim 0 full, one position along the others) as reference tensors.
ref::tensor row3(const fb& x, int t, int b) { return ref::to_ref(x.cropped(1, t, 1).cropped(2, b, 1)); }
void compare_row3(const fb& got, const ref::tensor& want, int t, int b, error_meter& m) {
  for (int i = 0; i < got.dim(0).extent(); ++i)
    m.add(got(i, t, b), want.data[std::size_t(i)]);
}
// Sampled (t, b) rows: first, last and a few in between.
std::vector<std::pair<int, int>> sample_rows(int T, int B) {
  std::vector<std::pair<int, int>> s{{0, 0}, {T - 1, B - 1}};
  std::uniform_int_distribution<int> tt(0, T - 1), bb(0, B - 1);
  for (int k = 0; k < 4; ++k)
    s.emplace_back(tt(rng), bb(rng));
  return s;
}

problem make_problem(shape_args& s) {
  problem p;
#if defined(HF_KERNEL_LOGITS)
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  p.make = [=] {
    return call_set{{random({D, T, B}, 1), random({V, D}, 1 / std::sqrt(float(D))), random({V}, 0.1f), fb(V, T, B)}};
  };
  p.call = [](call_set& c) { return candidate(c.f[0], c.f[1], c.f[2], c.f[3]); };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w = ref::to_ref(c.f[1]), bias = ref::to_ref(c.f[2]);
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[3], ref::linear(row3(c.f[0], t, b), w, bias), t, b, m);
  };
  p.flops = 2.0 * V * D * T * B, p.bytes = 4.0 * (V * D + D * T * B + V * T * B);
#elif defined(HF_KERNEL_FFN_RELU) || defined(HF_KERNEL_FFN_GELU)
  const int D = s["d_model"], F = s["d_ff"], T = s["t"], B = s["batch"];
#if defined(HF_KERNEL_FFN_GELU)
  const bool gelu = true;
#else
  const bool gelu = false;
#endif
  p.make = [=] {
    return call_set{{random({D, T, B}, 1), random({D, T, B}, 1), random({F, D}, 1 / std::sqrt(float(D))),
                     random({F}, 0.1f), random({D, F}, 1 / std::sqrt(float(F))), random({D}, 0.1f), fb(D, T, B)}};
  };
  p.call = [](call_set& c) { return candidate(c.f[0], c.f[1], c.f[2], c.f[3], c.f[4], c.f[5], c.f[6]); };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w1 = ref::to_ref(c.f[2]), b1 = ref::to_ref(c.f[3]), w2 = ref::to_ref(c.f[4]), b2 = ref::to_ref(c.f[5]);
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[6], ref::ffn(row3(c.f[0], t, b), row3(c.f[1], t, b), w1, b1, w2, b2, gelu), t, b, m);
  };
  p.flops = 4.0 * D * F * T * B, p.bytes = 4.0 * (2 * D * F + 3 * D * T * B);
#elif defined(HF_KERNEL_QKV_PROJECTION) || defined(HF_KERNEL_KV_PROJECTION) || defined(HF_KERNEL_Q_PROJECTION)
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
#if defined(HF_KERNEL_QKV_PROJECTION)
  constexpr int n = 3;
#elif defined(HF_KERNEL_KV_PROJECTION)
  constexpr int n = 2;
#else
  constexpr int n = 1;
#endif
  p.make = [=] {
    call_set c{{random({D, T, B}, 1)}};
    for (int k = 0; k < n; ++k)
      c.f.push_back(random({DK, H, D}, 1 / std::sqrt(float(D))));
    for (int k = 0; k < n; ++k)
      c.f.push_back(random({DK, H}, 0.1f));
    for (int k = 0; k < n; ++k)
      c.f.push_back(fb(DK, T, H, B));
    return c;
  };
  p.call = [=](call_set& c) {
    auto& f = c.f;
#if defined(HF_KERNEL_QKV_PROJECTION)
    return candidate(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]);
#elif defined(HF_KERNEL_KV_PROJECTION)
    return candidate(f[0], f[1], f[2], f[3], f[4], f[5], f[6]);
#else
    return candidate(f[0], f[1], f[2], f[3]);
#endif
  };
  p.verify = [=](call_set& c, error_meter& m) {
    for (int k = 0; k < n; ++k) {
      const auto w = ref::head_weight_to_ref(c.f[1 + k]), bias = ref::head_bias_to_ref(c.f[1 + n + k]);
      const fb& out = c.f[1 + 2 * n + k];
      for (auto [t, b] : sample_rows(T, B)) {
        const auto want = ref::linear(row3(c.f[0], t, b), w, bias);
        for (int h = 0; h < H; ++h)
          for (int j = 0; j < DK; ++j)
            m.add(out(j, t, h, b), want.data[std::size_t(h * DK + j)]);
      }
    }
  };
  p.flops = 2.0 * n * D * D * T * B, p.bytes = 4.0 * (n * D * D + (1 + n) * D * T * B);
#elif defined(HF_KERNEL_OUT_PROJECTION)
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
  p.make = [=] {
    return call_set{{random({DK, T, H, B}, 1), random({D, DK, H}, 1 / std::sqrt(float(D))), random({D}, 0.1f),
                     random({D, T, B}, 1), fb(D, T, B)}};
  };
  p.call = [](call_set& c) { return candidate(c.f[0], c.f[1], c.f[2], c.f[3], c.f[4]); };
  p.verify = [=](call_set& c, error_meter& m) {
    ref::tensor w({D, D});
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < DK; ++j)
        for (int o = 0; o < D; ++o)
          w(o, h * DK + j) = c.f[1](o, j, h);
    const auto bias = ref::to_ref(c.f[2]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto a = ref::merge_heads(ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, b, 1)));
      compare_row3(c.f[4], ref::add(row3(c.f[3], t, b), ref::linear(a, w, bias)), t, b, m);
    }
  };
  p.flops = 2.0 * D * D * T * B, p.bytes = 4.0 * (D * D + 3 * D * T * B);
#elif defined(HF_KERNEL_ATTENTION)
  const int DK = s["d_k"], H = s["heads"], T = s["t"], TK = s["tk"], B = s["batch"], causal = s["causal"];
  const int offset = causal ? TK - T : 0; // queries are the last T positions (decode: T = 1)
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1), random({DK, TK, H, B}, 1), random({DK, TK, H, B}, 1), fb(DK, T, H, B)},
               {ib(B)}};
    c.i[0].fill(TK);
    return c;
  };
  p.call = [=](call_set& c) { return candidate(c.f[0], c.f[1], c.f[2], c.i[0], causal != 0, offset, c.f[3]); };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B)) {
      const auto q = ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, b, 1));
      const auto k = ref::to_ref(c.f[1].cropped(3, b, 1)), v = ref::to_ref(c.f[2].cropped(3, b, 1));
      const auto want = ref::attention(q, k, v, {TK}, causal != 0, offset + t);
      for (int h = 0; h < H; ++h)
        for (int j = 0; j < DK; ++j)
          m.add(c.f[3](j, t, h, b), want(j, 0, h, 0));
    }
  };
  p.flops = 4.0 * DK * T * TK * H * B * (causal ? 0.5 : 1.0), p.bytes = 4.0 * DK * H * B * (2 * T + 2 * TK);
#elif defined(HF_KERNEL_LAYERNORM) || defined(HF_KERNEL_ADD_LAYERNORM)
  const int D = s["d_model"], T = s["t"], B = s["batch"];
#if defined(HF_KERNEL_ADD_LAYERNORM)
  const bool residual = true;
#else
  const bool residual = false;
#endif
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({D}, 1), random({D}, 1), fb(D, T, B)}};
    if (residual)
      c.f.insert(c.f.begin() + 1, random({D, T, B}, 1));
    return c;
  };
  p.call = [=](call_set& c) {
#if defined(HF_KERNEL_ADD_LAYERNORM)
    return candidate(c.f[0], c.f[1], c.f[2], c.f[3], 1e-5f, c.f[4]);
#else
    return candidate(c.f[0], c.f[1], c.f[2], 1e-5f, c.f[3]);
#endif
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const int r = residual ? 1 : 0;
    const auto g = ref::to_ref(c.f[1 + r]), be = ref::to_ref(c.f[2 + r]);
    for (auto [t, b] : sample_rows(T, B)) {
      auto x = row3(c.f[0], t, b);
      if (residual)
        x = ref::add(x, row3(c.f[1], t, b));
      compare_row3(c.f[3 + r], ref::layernorm(x, g, be, 1e-5), t, b, m);
    }
  };
  p.flops = 8.0 * D * T * B, p.bytes = 4.0 * D * T * B * (residual ? 3 : 2);
#elif defined(HF_KERNEL_SOFTMAX) || defined(HF_KERNEL_LOG_SOFTMAX)
  const int N = s["n"], T = s["t"], B = s["batch"];
#if defined(HF_KERNEL_LOG_SOFTMAX)
  const bool log = true;
#else
  const bool log = false;
#endif
  p.make = [=] {
    call_set c{{random({N, T, B}, 3), fb(N, T, B)}, {ib(B)}};
    c.i[0].fill(N);
    return c;
  };
  p.call = [](call_set& c) { return candidate(c.f[0], c.i[0], false, 0, c.f[1]); };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[1], ref::softmax(row3(c.f[0], t, b), {N}, false, 0, log), t, b, m);
  };
  p.flops = 4.0 * N * T * B, p.bytes = 8.0 * N * T * B;
#elif defined(HF_KERNEL_GREEDY_PICK)
  const int V = s["vocab"], T = s["t"], B = s["batch"];
  p.make = [=] { return call_set{{random({V, T, B}, 3), fb(T, B)}, {ib(T, B)}}; };
  p.call = [](call_set& c) { return candidate(c.f[0], c.i[0], c.f[1]); };
  p.verify = [=](call_set& c, error_meter& m) {
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::greedy_pick(row3(c.f[0], t, b));
      m.add(c.i[0](t, b), want.ids[0]); // ids: exact, so any miss is a large error
      m.add(c.f[1](t, b), want.log_p[0]);
    }
  };
  p.flops = 4.0 * V * T * B, p.bytes = 8.0 * V * T * B;
#elif defined(HF_KERNEL_EMBEDDING)
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  p.make = [=] {
    call_set c{{random({D, V}, 1), fb(D, T, B)}, {ib(T, B)}};
    std::uniform_int_distribution<int> id(0, V - 1);
    c.i[0].for_each_value([&](int32_t& x) { x = id(rng); });
    return c;
  };
  p.call = [=](call_set& c) { return candidate(c.f[0], c.i[0], std::sqrt(float(D)), 0, c.f[1]); };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto table = ref::to_ref(c.f[0]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::embedding(table, {{c.i[0](t, b)}}, std::sqrt(double(D)), t);
      compare_row3(c.f[1], want, t, b, m);
    }
  };
  p.flops = 2.0 * D * T * B, p.bytes = 8.0 * D * T * B;
#endif
  s.check_all_used();
  return p;
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::size_t set_bytes(const call_set& c) {
  std::size_t n = 0;
  for (const auto& b : c.f)
    n += b.size_in_bytes();
  for (const auto& b : c.i)
    n += b.size_in_bytes();
  return n;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s d_model=512,t=128,... [--threads N] [--samples S] [--min-ms M] [--seed X]\n",
                 argv[0]);
    return 2;
  }
  int threads = 0, samples = 7, seed = 1;
  std::string device;
  double min_ms = 20;
  shape_args shape;
  try {
    std::stringstream ss(argv[1]);
    for (std::string kv; std::getline(ss, kv, ',');) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos)
        throw std::runtime_error("shape item '" + kv + "' is not name=value");
      shape.v[kv.substr(0, eq)] = std::stoi(kv.substr(eq + 1));
    }
    for (int i = 2; i + 1 < argc; i += 2) {
      const std::string a = argv[i];
      if (a == "--threads")
        threads = std::stoi(argv[i + 1]);
      else if (a == "--samples")
        samples = std::max(1, std::stoi(argv[i + 1]));
      else if (a == "--min-ms")
        min_ms = std::stod(argv[i + 1]);
      else if (a == "--seed")
        seed = std::stoi(argv[i + 1]);
      else if (a == "--device")
        device = argv[i + 1];
      else
        throw std::runtime_error("unknown option " + a);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: %s\n", e.what());
    return 2;
  }
  rng.seed(seed);
  if (threads > 0)
    halide_set_num_threads(threads);
  problem p;
  try {
    p = make_problem(shape);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: %s\n", e.what());
    return 2;
  }
  if (!device.empty() && device != "opencl" && device != "cuda") {
    std::fprintf(stderr, "harness: unknown device '%s'\n", device.c_str());
    return 2;
  }
  const bool gpu = !device.empty();
  // On a GPU: fresh host data goes up on the first call; results are complete
  // when the device has finished (sync), and are read on the host.
  auto fresh = [&](call_set c) {
    for (auto& b : c.f)
      b.set_host_dirty();
    for (auto& b : c.i)
      b.set_host_dirty();
    return c;
  };
  auto sync = [&](call_set& c) {
    for (auto& b : c.f)
      if (b.raw_buffer()->device)
        return halide_device_sync(nullptr, b.raw_buffer());
    return 0;
  };
  auto call = [&](call_set& c) {
    const int rc = p.call(c);
    return rc != 0 || !gpu ? rc : sync(c);
  };
  p.sets.push_back(fresh(p.make()));
  // Verify before timing.
  if (int rc = call(p.sets[0]); rc != 0) {
    std::printf("{\"status\": \"kernel_error\", \"code\": %d}\n", rc);
    return 4;
  }
  if (gpu) {
    for (auto& b : p.sets[0].f)
      if (b.raw_buffer()->device_dirty())
        b.copy_to_host();
    for (auto& b : p.sets[0].i)
      if (b.raw_buffer()->device_dirty())
        b.copy_to_host();
  }
  error_meter m;
  p.verify(p.sets[0], m);
  const double err = m.result();
  if (!(err <= 1e-4)) {
    std::printf("{\"status\": \"wrong\", \"max_error\": %.3g}\n", err);
    return 3;
  }
  // Rotating copies: >= 64 MiB of inputs in all (up to 4096 copies, 1 GiB), so that
  // even a 4 KiB decode-step LayerNorm is timed from memory, not from the caches.
  const std::size_t per_set = std::max<std::size_t>(set_bytes(p.sets[0]), 1);
  const std::size_t n_sets = std::clamp<std::size_t>(
      (64u << 20) / per_set + 1, 1, std::max<std::size_t>(1, std::min<std::size_t>(4096, (1u << 30) / per_set)));
  while (p.sets.size() < n_sets)
    p.sets.push_back(fresh(p.make()));
  std::size_t next = 0;
  for (std::size_t w = 0; w < std::max<std::size_t>(3, gpu ? p.sets.size() : 0); ++w) // GPU: uploads them all
    call(p.sets[next++ % p.sets.size()]);
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) {
    int reps = 0;
    const double t0 = now_ms();
    double t1 = t0;
    do {
      if (call(p.sets[next++ % p.sets.size()]) != 0) {
        std::printf("{\"status\": \"kernel_error\"}\n");
        return 4;
      }
      ++reps;
      t1 = now_ms();
    } while (t1 - t0 < min_ms);
    times.push_back((t1 - t0) / reps);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("{\"status\": \"ok\", \"max_error\": %.3g, \"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, "
              "\"samples\": %d, \"min_sample_ms\": %g, \"input_sets\": %zu, \"threads\": %d, \"gflops\": %.4g, "
              "\"gbps\": %.4g, \"device\": \"%s\"}\n",
              err, median, times.front(), times.back(), samples, min_ms, p.sets.size(), threads, p.flops / median / 1e6,
              p.bytes / median / 1e6, gpu ? device.c_str() : "cpu");
  return 0;
}
