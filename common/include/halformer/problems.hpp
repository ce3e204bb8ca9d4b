// Every kernel as a problem at a shape: its arguments by name (as its DSL
// definition names them), random inputs, float64 verification against
// halformer/reference, the FLOP and byte counts, and shapes to test it at.
// kernel_problems.cpp lists one per kernel (the GEMMs written once over their
// weights' type in gemm_problems.cpp); the tuner's harness verifies and
// times them, the kernel benchmarks time them, and the kernel tests run every
// compiled kernel on its test shapes.
#pragma once

#include "halformer/gemm_epilogue.hpp"
#include "halformer/kernel_call.hpp"
#include "halformer/reference/convert.hpp"

#include <HalideBuffer.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace halformer::problems {

using Halide::Runtime::Buffer;
using fb = Buffer<float>;
using ib = Buffer<int32_t>;
using i8b = Buffer<int8_t>;
// bfloat16 values as their bits; the raw buffer's type says bfloat16 (Halide's
// runtime has no C++ bfloat16 type), so kernels taking bfloat16 accept it.
using bf16b = Buffer<uint16_t>;
// float16 values as their bits likewise (attention_f16kv's keys and values).
using f16b = Buffer<uint16_t>;

extern std::mt19937 rng;

fb random(std::vector<int> shape, float scale);
// An int8 GEMM weight of logical extents `shape`, uniform in [-127, 127], dense.
i8b random_int8_weight(std::vector<int> shape);
// A bfloat16 GEMM weight of logical extents `dims` (its first `inputs` dims index
// the input) of normal values (deviation `scale`) rounded to bfloat16, stored in
// panels as the runtime stores it (halformer/weight_layout.hpp); and such a
// weight as a reference (out, in) matrix.
bf16b random_bf16_panels(const std::vector<int>& dims, int inputs, float scale);
ref::tensor bf16_panels_to_ref(const bf16b& packed, const std::vector<int>& dims, int inputs);
// A float32 GEMM weight of logical extents `dims` in the dot-product order (its
// first `inputs` dims index the input) stored in panels (dsl/panels.hpp), as the
// runtime stores it; and such a weight as a reference (out, in) matrix (input and
// output the flattened indices of their dims).
fb random_panels(const std::vector<int>& dims, int inputs, float scale);
// Normal values (deviation `scale`) rounded to float16, and float16 values as a
// reference tensor (f16_problems.cpp).
f16b random_f16(std::vector<int> shape, float scale);
ref::tensor f16_to_ref(const f16b& b);
ref::tensor panels_to_ref(const fb& packed, const std::vector<int>& dims, int inputs);
// Attention's k or v (d_k, tk, heads, kv_row) as query row b reads it: key j from
// row rows(j, b) (its kv_rows table), one row.
template <class T> Buffer<T> gathered_row(const Buffer<T>& x, const ib& rows, int b) {
  Buffer<T> g(x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent(), 1);
  g.for_each_element([&](int d, int j, int h, int) { g(d, j, h, 0) = x(d, j, h, rows(j, b)); });
  return g;
}

// The shape's values by name; every one must be read by the kernel's problem.
struct shape_args {
  std::map<std::string, int> v;
  std::vector<std::string> used;
  int operator[](const std::string& k);
  int get(const std::string& k, int otherwise); // an optional key
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
  // The same where the reference allows `got` to differ from `want` by up to `slack`.
  void add(double got, double want, double slack) {
    const double excess = std::max(0.0, std::abs(got - want) - slack);
    add(std::isfinite(got) ? want + std::copysign(excess, got - want) : got, want);
  }
  double result() const;
};

// One set of inputs and outputs for one call.
struct call_set {
  std::vector<fb> f;
  std::vector<ib> i;
  std::vector<i8b> i8;
  std::vector<bf16b> bf16;
  std::vector<f16b> f16;
  // fn(buffer) for every buffer, in the caller's order (f, i, i8, bf16, f16).
  template <class F> void for_each_buffer(F&& fn) { visit(*this, fn); }
  template <class F> void for_each_buffer(F&& fn) const { visit(*this, fn); }

private:
  template <class Set, class F> static void visit(Set& s, F& fn) {
    for (auto& b : s.f)
      fn(b);
    for (auto& b : s.i)
      fn(b);
    for (auto& b : s.i8)
      fn(b);
    for (auto& b : s.bf16)
      fn(b);
    for (auto& b : s.f16)
      fn(b);
  }
};

// A GEMM a kernel computes and its epilogue, for the BLAS baselines.
using gemm_dims = gemm_shape;

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
// i[k] is i_names[k], i8[k] is i8_names[k], bf16[k] is bf16_names[k], f16[k] is
// f16_names[k]; `outputs` names the written ones), how to make a
// set of them, sampled float64 verification and the costs behind GFLOP/s and GB/s.
struct problem {
  std::vector<std::string> f_names, i_names, i8_names, bf16_names, f16_names, outputs;
  std::vector<scalar_input> scalars;
  std::function<call_set()> make;
  std::function<void(call_set&, error_meter&)> verify; // rows: sample_rows()
  // The step's activations: the arguments a model's kernel finds in cache, since
  // the kernel before it wrote them (its input rows) or the kernel after it reads
  // them at once (its outputs). The others (weights, steps, biases, tables,
  // attention caches, cache writes) come from memory in a model, whose weights
  // exceed the caches. Names of the lists above; make_problem checks them.
  std::vector<std::string> activations;
  // flops: the arithmetic; bytes: what a call moves to or from memory in a model,
  // its non-activation arguments (the rows a gather reads, not its whole table).
  double flops = 0, bytes = 0;
  std::vector<gemm_dims> gemms;
  // Largest accepted error_meter result: the kernel tests' 1e-5 of (|ref| + rms),
  // since a float32 reduction of K terms errs by ~sqrt(K) 2^-24 (< 3e-6 at
  // K = 2048) while indexing or mask bugs err by 1e-2..1. Problems with a stated
  // larger float32 error raise it (embedding: positions).
  double tolerance = 1e-5;

  std::vector<call_set> sets;
  halformer::kernel_call call; // bound by bind()
  void bind(const halformer_kernel& k);
  int operator()(call_set& c);
  bool is_activation(const std::string& name) const;
  bool is_argument(const std::string& name) const;
  // sets[0]'s bytes: its non-activation arguments' (whole tables), its activations'.
  std::pair<std::size_t, std::size_t> set_bytes() const;
  // Sets for a timing loop after sets[0] (made, maybe verified): copies whose
  // non-activation arguments are copied, timing::rotation_bytes() of them in all
  // (up to 4096 sets), so that weights come from memory as in a model, while
  // every set shares sets[0]'s activations, which stay in cache as in a model
  // (Zen 5, int8 q projection at batch 8: 7.8 us a call in `run --profile`'s
  // decode steps; the harness 9.2 us with its activations rotated too, 7.3 with
  // them shared). A kernel of activations alone (softmax) takes one set.
  void add_rotation_sets();
};

// "d_model=512,t=1,batch=8" as shape values.
shape_args parse_shape(const std::string& text);
// The problem of kernel `name` at `shape` (kernel_problems.cpp).
problem make_problem(const std::string& name, shape_args& shape);
// The kernels with a problem, and the shapes the kernel tests run each at: small
// and awkward (1, 7, 333, non-multiples of the vector width), at least one in
// each shape bucket (prefill, decode, decode1).
std::vector<std::string> problem_kernels();
const std::vector<std::string>& test_shapes(const std::string& kernel);

// Row slices (dim 0 full, one position along the others) as reference tensors.
ref::tensor row3(const fb& x, int t, int b);
void compare_row3(const fb& got, const ref::tensor& want, int t, int b, error_meter& m);
// A head-layout output's row (d_k, t, heads, batch at t, b) against want (heads x d_k).
void compare_heads(const fb& got, const ref::tensor& want, int t, int b, error_meter& m);
// The GEMM kernels' weights of one type (gemm_problems.cpp), as the runtime
// loads them, in panels (dsl/panels.hpp): float32 (a float argument <name>),
// int8 with a step and a value sum per output (an i8 argument <name>, a float
// one <name>_step and an int32 one <name>_sums), or bfloat16 (a bf16 argument <name>). The GEMM problems are
// written once over it.
enum class weight_type { float32, int8, bf16 };
struct gemm_weights {
  weight_type type;
  // Where weight <name>'s buffers are in a call_set: `weight` in the type's list
  // (f, i8 or bf16), an int8 weight's `step` in f.
  struct slot {
    std::size_t weight, step;
  };
  struct ffn_operands {
    ref::tensor x, residual, w1, b1, w2, b2;
  };
  struct ffn_result {
    ref::tensor y, slack; // slack: what hidden values at a rounding boundary may change
  };
  double bytes() const; // of a weight element
  double tolerance() const;
  // Appends weight <w>'s arguments to p's names, in the order add() makes them.
  void name(problem& p, const std::string& w) const;
  slot slot_of(const problem& p, const std::string& w) const;
  // Appends a random weight of logical extents `dims` (its first `inputs` dims index the input).
  void add(call_set& c, const std::vector<int>& dims, int inputs) const;
  // The weight at `s` as a reference (out, in) matrix.
  ref::tensor reference(const call_set& c, slot s, const std::vector<int>& dims, int inputs) const;
  // The output for input row(s) x of the weight at `s`, its reference `w` and the bias.
  ref::tensor linear(const call_set& c, slot s, const ref::tensor& x, const ref::tensor& w,
                     const ref::tensor& bias) const;
  ffn_result ffn(const call_set& c, slot s1, slot s2, const ffn_operands& o, ref::activation act) const;
  // A call's bytes from memory: the weights' elements, and a bias (and step) per output.
  double call_bytes(double weight_elements, double outputs) const;
};
problem logits(shape_args& s, const gemm_weights& w);
problem head_projections(shape_args& s, const std::string& which, const gemm_weights& w); // which: e.g. "qkv"
problem out_projection(shape_args& s, const gemm_weights& w);
problem ffn(shape_args& s, const gemm_weights& w, ref::activation act);
// The (t, b) rows verify() compares: first, last and a few in between, or every
// row after verify_every_row(true) (the kernel tests).
std::vector<std::pair<int, int>> sample_rows(int T, int B);
void verify_every_row(bool all);

} // namespace halformer::problems
