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
// halformer/reference on sampled rows of the output (the same references the kernel
// tests use); only a verified candidate is timed. Timing: warm-up, then S samples,
// each repeating the call over rotating copies of the weights, tables and caches
// (together timing::rotation_bytes(): twice the last-level cache, at least 64 MiB,
// so that they come from memory as in a model, not from a
// hot cache), the step's activations one copy in cache (problem::add_rotation_sets),
// for at least M ms. Prints one JSON object; exit 0 measured, 3 wrong, 4 kernel error,
// 2 bad arguments.
#include "halformer/problems.hpp"
#include "halformer/timing.hpp"

#include <HalideRuntime.h>
#include <halformer_kernels.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

extern "C" {
int candidate_argv(void**);
const struct halide_filter_metadata_t* candidate_metadata(void);
}

namespace {
using namespace halformer::problems;

struct settings {
  shape_args shape;
  int threads = 0, samples = 7, seed = 1;
  double min_ms = 20;
  std::string device; // "" (CPU), opencl, cuda
};

settings parse(int argc, char** argv) {
  settings s;
  s.shape = parse_shape(argv[1]);
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads")
      s.threads = std::stoi(argv[i + 1]);
    else if (a == "--samples")
      s.samples = std::max(1, std::stoi(argv[i + 1]));
    else if (a == "--min-ms")
      s.min_ms = std::stod(argv[i + 1]);
    else if (a == "--seed")
      s.seed = std::stoi(argv[i + 1]);
    else if (a == "--device")
      s.device = argv[i + 1];
    else
      throw std::runtime_error("unknown option " + a);
  }
  if (!s.device.empty() && s.device != "opencl" && s.device != "cuda")
    throw std::runtime_error("unknown device '" + s.device + "'");
  return s;
}

// The candidate on one set of inputs. On a GPU fresh host data goes up on the
// first call, and results are complete when the device has finished (sync).
struct candidate_call {
  problem& p;
  bool gpu;
  static call_set fresh(call_set c) {
    c.for_each_buffer([](auto& b) { b.set_host_dirty(); });
    return c;
  }
  int operator()(call_set& c) const {
    const int rc = p(c);
    if (rc != 0 || !gpu)
      return rc;
    for (auto& b : c.f)
      if (b.raw_buffer()->device)
        return halide_device_sync(nullptr, b.raw_buffer());
    return 0;
  }
};

// Verifies the first set's outputs (read back from a GPU); returns the error.
double verify(problem& p, bool gpu) {
  if (gpu) {
    p.sets[0].for_each_buffer([](auto& b) {
      if (b.raw_buffer()->device_dirty())
        b.copy_to_host();
    });
  }
  error_meter m;
  p.verify(p.sets[0], m);
  return m.result();
}
} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s d_model=512,t=128,... [--threads N] [--samples S] [--min-ms M] [--seed X]\n",
                 argv[0]);
    return 2;
  }
  settings s;
  problem p;
  try {
    s = parse(argc, argv);
    rng.seed(s.seed);
    p = make_problem(HF_KERNEL_NAME, s.shape);
    p.bind({"candidate", candidate_argv, candidate_metadata});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: %s\n", e.what());
    return 2;
  }
  if (s.threads > 0)
    halformer_set_num_threads(s.threads); // the pool models run on (thread_pool.c)
  const bool gpu = !s.device.empty();
  const candidate_call call{p, gpu};
  p.sets.push_back(candidate_call::fresh(p.make()));
  if (int rc = call(p.sets[0]); rc != 0) { // verify before timing
    std::printf("{\"status\": \"kernel_error\", \"code\": %d}\n", rc);
    return 4;
  }
  const double err = verify(p, gpu);
  if (!(err <= p.tolerance)) {
    std::printf("{\"status\": \"wrong\", \"max_error\": %.3g}\n", err);
    return 3;
  }
  p.add_rotation_sets();
  for (std::size_t k = 1; k < p.sets.size(); ++k)
    p.sets[k] = candidate_call::fresh(std::move(p.sets[k]));
  std::size_t next = 0;
  if (gpu) // upload every set before timing
    for (std::size_t w = 0; w < p.sets.size(); ++w)
      call(p.sets[next++ % p.sets.size()]);
  int rc = 0;
  const auto t = halformer::timing::interleaved({[&] { rc |= call(p.sets[next++ % p.sets.size()]); }}, s.samples,
                                                s.min_ms, /*warmup_calls=*/3)[0];
  if (rc != 0) {
    std::printf("{\"status\": \"kernel_error\"}\n");
    return 4;
  }
  std::printf("{\"status\": \"ok\", \"max_error\": %.3g, \"median_ms\": %.6g, \"min_ms\": %.6g, \"max_ms\": %.6g, "
              "\"samples\": %d, \"min_sample_ms\": %g, \"input_sets\": %zu, \"threads\": %d, \"gflops\": %.4g, "
              "\"gbps\": %.4g, \"device\": \"%s\"}\n",
              err, t.median_ms, t.min_ms, t.max_ms, s.samples, s.min_ms, p.sets.size(), s.threads,
              p.flops / t.median_ms / 1e6, p.bytes / t.median_ms / 1e6, gpu ? s.device.c_str() : "cpu");
  return 0;
}
