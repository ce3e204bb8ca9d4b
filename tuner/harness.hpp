// The measuring harness's model of one kernel at one shape (harness_problems.cpp
// defines one per kernel; harness.cpp verifies and times it).
#pragma once

#include "../tests/reference/convert.hpp"
#include "halformer/kernel_call.hpp"

#include <HalideBuffer.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace harness {

using Halide::Runtime::Buffer;
using fb = Buffer<float>;
using ib = Buffer<int32_t>;

extern std::mt19937 rng;

fb random(std::vector<int> shape, float scale);

// The shape's values by name; every one must be read by the kernel's problem.
struct shape_args {
  std::map<std::string, int> v;
  std::vector<std::string> used;
  int operator[](const std::string& k);
  void check_all_used() const;
};

// Worst |got - want| / (|want| + rms(want)) over the compared elements.
struct error_meter {
  double ss = 0;
  std::size_t n = 0;
  std::vector<std::pair<double, double>> pairs;
  void add(double got, double want) {
    pairs.emplace_back(got, want);
    ss += want * want, ++n;
  }
  double result() const;
};

// One set of inputs and outputs for one call.
struct call_set {
  std::vector<fb> f;
  std::vector<ib> i;
};

union scalar_value {
  float f32;
  int32_t i32;
  bool boolean;
};
struct scalar_input {
  std::string name;
  halide_type_t type;
  scalar_value value;
};

// A kernel at a shape: its arguments by name (call_set::f[k] is f_names[k],
// i[k] is i_names[k]; `outputs` names the written ones), how to make a set of
// them, sampled float64 verification and the costs behind GFLOP/s and GB/s.
struct problem {
  std::vector<std::string> f_names, i_names, outputs;
  std::vector<scalar_input> scalars;
  std::function<call_set()> make;
  std::function<void(call_set&, error_meter&)> verify;
  double flops = 0, bytes = 0;
  // Largest accepted error_meter result: the kernel tests' 1e-5 of (|ref| + rms),
  // since a float32 reduction of K terms errs by ~sqrt(K) 2^-24 (< 3e-6 at
  // K = 2048) while indexing or mask bugs err by 1e-2..1. Problems with a stated
  // larger float32 error raise it (embedding: positions).
  double tolerance = 1e-5;

  std::vector<call_set> sets;
  halformer::kernel_call call; // bound by bind()
  void bind(const halformer_kernel& k);
  int operator()(call_set& c);
};

// The problem of kernel `name` at `shape` (harness_problems.cpp).
problem make_problem(const std::string& name, shape_args& shape);

// Row slices (dim 0 full, one position along the others) as reference tensors.
ref::tensor row3(const fb& x, int t, int b);
void compare_row3(const fb& got, const ref::tensor& want, int t, int b, error_meter& m);
// Sampled (t, b) rows: first, last and a few in between.
std::vector<std::pair<int, int>> sample_rows(int T, int B);

} // namespace harness
