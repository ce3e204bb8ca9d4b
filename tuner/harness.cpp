// The tuner's measuring harness: one binary per candidate, linked from this file
// (compiled once per kernel with -DHF_KERNEL_NAME="<kernel>") and the candidate's
// static library, whose function is `candidate`, called through candidate_argv
// with its arguments bound by name (candidate_metadata()). Run in a child process
// by the tuner:
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
#include "harness.hpp"

#include <HalideRuntime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

extern "C" {
int halide_set_num_threads(int);
int candidate_argv(void**);
const struct halide_filter_metadata_t* candidate_metadata(void);
}

namespace harness {

std::mt19937 rng;

fb random(std::vector<int> shape, float scale) {
  fb b(shape);
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](float& v) { v = n(rng); });
  return b;
}

int shape_args::operator[](const std::string& k) {
  auto it = v.find(k);
  if (it == v.end())
    throw std::runtime_error("shape lacks '" + k + "'");
  used.push_back(k);
  return it->second;
}
void shape_args::check_all_used() const {
  for (const auto& [k, x] : v)
    if (std::find(used.begin(), used.end(), k) == used.end())
      throw std::runtime_error("shape key '" + k + "' does not apply to this kernel");
}

double error_meter::result() const {
  const double rms = std::sqrt(ss / double(std::max<std::size_t>(n, 1)));
  double w = 0;
  for (auto [g, r] : pairs)
    w = std::max(w, std::isfinite(g) ? std::abs(g - r) / (std::abs(r) + rms + 1e-30) : INFINITY);
  return w;
}

ref::tensor row3(const fb& x, int t, int b) { return ref::to_ref(x.cropped(1, t, 1).cropped(2, b, 1)); }
void compare_row3(const fb& got, const ref::tensor& want, int t, int b, error_meter& m) {
  for (int i = 0; i < got.dim(0).extent(); ++i)
    m.add(got(i, t, b), want.data[std::size_t(i)]);
}
std::vector<std::pair<int, int>> sample_rows(int T, int B) {
  std::vector<std::pair<int, int>> s{{0, 0}, {T - 1, B - 1}};
  std::uniform_int_distribution<int> tt(0, T - 1), bb(0, B - 1);
  for (int k = 0; k < 4; ++k)
    s.emplace_back(tt(rng), bb(rng));
  return s;
}

// The caller's order: f buffers, i buffers, scalars (see operator()).
void problem::bind(const halformer_kernel& k) {
  const call_set c = make();
  std::vector<halformer::arg_spec> specs;
  auto buffer = [&](const std::string& n, halide_type_t t, int dims) {
    const bool out = std::find(outputs.begin(), outputs.end(), n) != outputs.end();
    specs.push_back(out ? halformer::output_arg(n, t, dims) : halformer::input_arg(n, t, dims));
  };
  for (std::size_t j = 0; j < f_names.size(); ++j)
    buffer(f_names[j], halformer::f32_type, c.f.at(j).dimensions());
  for (std::size_t j = 0; j < i_names.size(); ++j)
    buffer(i_names[j], halformer::i32_type, c.i.at(j).dimensions());
  for (const auto& s : scalars)
    specs.push_back(halformer::scalar_arg(s.name, s.type));
  call = halformer::kernel_call(k, specs);
}

int problem::operator()(call_set& c) {
  std::array<void*, halformer::kernel_call::max_args> args;
  std::size_t n = 0;
  for (auto& b : c.f)
    args[n++] = b.raw_buffer();
  for (auto& b : c.i)
    args[n++] = b.raw_buffer();
  for (auto& s : scalars)
    args[n++] = &s.value;
  return call(args.data());
}

namespace {
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
} // namespace harness

int main(int argc, char** argv) {
  using namespace harness;
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
    p = make_problem(HF_KERNEL_NAME, shape);
    p.bind({"candidate", candidate_argv, candidate_metadata});
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
    const int rc = p(c);
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
  if (!(err <= p.tolerance)) {
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
