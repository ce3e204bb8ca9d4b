// The weight-heavy kernels (head projections, out projection, FFN, logits),
// each written once for every GEMM compute type C (compute_types.hpp): the
// float32 ones, the *_int8 ones and the *_bf16 ones are these templates with
// compute::float32, compute::int8 and compute::bfloat16.
//
// Weights are in the dot-product layout (a weight row is one output's inputs,
// PyTorch's [out][in] as it is), stored in panels of 16 outputs (panels.hpp,
// panel_input); int8 ones carry one step and one sum of their values per
// output ("<weight>_step", "<weight>_sums": C::aux). An input's argument order:
// activations, then weights, then (int8) their steps and sums, then biases, as
// each kernel's inputs() lists them. LayerNorm, softmax and
// attention stay float32 in every type (an int8 model's decoder keeps its keys
// and values in float16 on the CPU: kernels_attention.hpp). Part of
// kernels.hpp's registry.
#pragma once

#include "halformer/dsl/compute_types.hpp"

namespace halformer::dsl::kernels {

using namespace dims;

// A weight in panels of C's element type (its auxiliary leaves, if C has them: C::aux).
template <class C, class S> auto gemm_weight(const std::string& n, S s, int inputs) {
  return panel_input(n, s, inputs, C::weight_type);
}

// Q, K and V (or a subset) of x, directly in head layout (d_k, t, heads, batch),
// x prepared once for all of them (int8: quantized as "x_quantized"; bfloat16:
// rounded as "x_bf16"). Weights (d_model, d_k, heads), their aux and biases (d_k, heads).
template <class C> struct head_projection_in {
  static constexpr std::string_view schedule = name_in<"head_projection", C>;
  static constexpr bool cpu_only = C::cpu_only;
  HF_LEAF(x, input("x", shape(d_model, t, batch)));
  static auto weight(const std::string& n) { return gemm_weight<C>(n, shape(d_model, d_k, heads), 1); }
  static auto aux(const std::string& n) { return C::aux(n, shape(d_k, heads)); }
  static auto bias(const std::string& n) { return input(n, shape(d_k, heads)); }

  // which: "q", "k" or "v"; inputs "w_<which>", (its aux "w_<which>_step" and "w_<which>_sums",) "b_<which>"; stage
  // "<which>_proj".
  auto projection(const std::string& which) const {
    const std::string w = "w_" + which;
    return result(which, C::linear(which + "_proj", C::prepared("x", x), weight(w), aux(w), bias("b_" + which),
                                   shape(d_k, t, heads, batch)));
  }
  // x, the weights, their aux, the biases of the projections `which`.
  template <class... W> auto inputs_of(const W&... which) const {
    return hana::flatten(hana::make_tuple(hana::make_tuple(x, weight(std::string("w_") + which)...),
                                          aux(std::string("w_") + which)...,
                                          hana::make_tuple(bias(std::string("b_") + which)...)));
  }
};
// Self-attention's three projections of one input.
template <class C> struct qkv_projection_in : head_projection_in<C> {
  static constexpr std::string_view name = name_in<"qkv_projection", C>;
  auto inputs() const { return this->inputs_of("q", "k", "v"); }
  auto outputs() const { return hana::make_tuple(this->projection("q"), this->projection("k"), this->projection("v")); }
};
// Cross-attention keys and values of the encoder output (once per source).
template <class C> struct kv_projection_in : head_projection_in<C> {
  static constexpr std::string_view name = name_in<"kv_projection", C>;
  auto inputs() const { return this->inputs_of("k", "v"); }
  auto outputs() const { return hana::make_tuple(this->projection("k"), this->projection("v")); }
};
// Cross-attention queries.
template <class C> struct q_projection_in : head_projection_in<C> {
  static constexpr std::string_view name = name_in<"q_projection", C>;
  auto inputs() const { return this->inputs_of("q"); }
  auto outputs() const { return hana::make_tuple(this->projection("q")); }
};

// Merge heads, project, add bias and the residual. Weights (d_k, heads, d_model):
// an output's inputs are all heads' features (int8: a row of the heads' output,
// all heads at one position, is quantized as one).
template <class C> struct out_projection_in {
  static constexpr std::string_view name = name_in<"out_projection", C>, schedule = name;
  static constexpr bool cpu_only = C::cpu_only;
  HF_LEAF(a, input("a", shape(d_k, t, heads, batch)));
  HF_LEAF(w, gemm_weight<C>("w", shape(d_k, heads, d_model), 2));
  HF_LEAF(w_aux, C::aux("w", shape(d_model)));
  HF_LEAF(b, input("b", shape(d_model)));
  HF_LEAF(residual, input("residual", shape(d_model, t, batch)));

  auto algorithm() const {
    return add("residual_add", residual, C::linear("proj", a, w, w_aux, b, shape(d_model, t, batch)));
  }
  auto inputs() const {
    return hana::flatten(hana::make_tuple(hana::make_tuple(a, w), w_aux, hana::make_tuple(b, residual)));
  }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// residual + W2 act(W1 x + b1) + b2. Weights (d_model, d_ff) and (d_ff, d_model);
// the activated hidden layer is prepared per row for the second GEMM (int8:
// quantized, bfloat16: rounded).
template <class C> struct ffn_in {
  static constexpr std::string_view schedule = name_in<"ffn", C>;
  static constexpr bool cpu_only = C::cpu_only;
  HF_LEAF(x, input("x", shape(d_model, t, batch)));
  HF_LEAF(residual, input("residual", shape(d_model, t, batch)));
  HF_LEAF(w1, gemm_weight<C>("w1", shape(d_model, d_ff), 1));
  HF_LEAF(w1_aux, C::aux("w1", shape(d_ff)));
  HF_LEAF(b1, input("b1", shape(d_ff)));
  HF_LEAF(w2, gemm_weight<C>("w2", shape(d_ff, d_model), 1));
  HF_LEAF(w2_aux, C::aux("w2", shape(d_model)));
  HF_LEAF(b2, input("b2", shape(d_model)));

  auto algorithm(op::activation act) const {
    auto hidden = activate("hidden_act", act, C::linear("hidden", x, w1, w1_aux, b1, shape(d_ff, t, batch)));
    return add("residual_add", residual, C::linear("proj", hidden, w2, w2_aux, b2, shape(d_model, t, batch)));
  }
  auto inputs() const {
    return hana::flatten(hana::make_tuple(hana::make_tuple(x, residual, w1), w1_aux, hana::make_tuple(b1, w2), w2_aux,
                                          hana::make_tuple(b2)));
  }
};
template <class C> struct ffn_relu_in : ffn_in<C> {
  static constexpr std::string_view name = name_in<"ffn_relu", C>;
  auto outputs() const { return hana::make_tuple(result("out", this->algorithm(op::activation::relu))); }
};
template <class C> struct ffn_gelu_in : ffn_in<C> {
  static constexpr std::string_view name = name_in<"ffn_gelu", C>;
  auto outputs() const { return hana::make_tuple(result("out", this->algorithm(op::activation::gelu))); }
};
template <class C> struct ffn_silu_in : ffn_in<C> {
  static constexpr std::string_view name = name_in<"ffn_silu", C>;
  auto outputs() const { return hana::make_tuple(result("out", this->algorithm(op::activation::silu))); }
};

// Final projection to the target vocabulary. Weight (d_model, vocab): the
// embedding table's layout (a tied output layer's weight is held once), int8
// with one step and sum per vocabulary entry.
template <class C> struct logits_in {
  static constexpr std::string_view name = name_in<"logits", C>, schedule = name;
  static constexpr bool cpu_only = C::cpu_only;
  HF_LEAF(x, input("x", shape(d_model, t, batch)));
  HF_LEAF(w, gemm_weight<C>("w", shape(d_model, vocab), 1));
  HF_LEAF(w_aux, C::aux("w", shape(vocab)));
  HF_LEAF(b, input("b", shape(vocab)));

  auto inputs() const { return hana::flatten(hana::make_tuple(hana::make_tuple(x, w), w_aux, hana::make_tuple(b))); }
  auto outputs() const {
    return hana::make_tuple(result("out", C::linear("logits", x, w, w_aux, b, shape(vocab, t, batch))));
  }
};

using qkv_projection = qkv_projection_in<compute::float32>;
using kv_projection = kv_projection_in<compute::float32>;
using q_projection = q_projection_in<compute::float32>;
using out_projection = out_projection_in<compute::float32>;
using ffn_relu = ffn_relu_in<compute::float32>;
using ffn_gelu = ffn_gelu_in<compute::float32>;
using ffn_silu = ffn_silu_in<compute::float32>;
using logits = logits_in<compute::float32>;

using qkv_projection_int8 = qkv_projection_in<compute::int8>;
using kv_projection_int8 = kv_projection_in<compute::int8>;
using q_projection_int8 = q_projection_in<compute::int8>;
using out_projection_int8 = out_projection_in<compute::int8>;
using ffn_relu_int8 = ffn_relu_in<compute::int8>;
using ffn_gelu_int8 = ffn_gelu_in<compute::int8>;
using ffn_silu_int8 = ffn_silu_in<compute::int8>;
using logits_int8 = logits_in<compute::int8>;

using qkv_projection_bf16 = qkv_projection_in<compute::bfloat16>;
using kv_projection_bf16 = kv_projection_in<compute::bfloat16>;
using q_projection_bf16 = q_projection_in<compute::bfloat16>;
using out_projection_bf16 = out_projection_in<compute::bfloat16>;
using ffn_relu_bf16 = ffn_relu_in<compute::bfloat16>;
using ffn_gelu_bf16 = ffn_gelu_in<compute::bfloat16>;
using ffn_silu_bf16 = ffn_silu_in<compute::bfloat16>;
using logits_bf16 = logits_in<compute::bfloat16>;

} // namespace halformer::dsl::kernels
