// The bfloat16 kernels: the float kernels' GEMMs with bfloat16 weights, their
// logical shape the dot-product layout (a weight row is one output's inputs,
// PyTorch's [out][in] as it is, as the int8 kernels'), stored in panels of 16
// outputs (panels.hpp, panel_input: a 64-byte line holds 2 inputs of each), the
// inputs rounded to bfloat16 once per kernel, products summed in float32
// (dsl::bf16_linear: a vdpbf16ps per panel and row on AVX-512 BF16), bias,
// activation and residual in float32. LayerNorm, softmax, attention and the
// embedding stay float32. CPU kernels only (no GPU bfloat16 schedules). Part of
// kernels.hpp's registry.
#pragma once

#include "halformer/dsl/bfloat16.hpp"

namespace halformer::dsl::kernels {

using namespace dims;

struct logits_bf16 {
  static constexpr std::string_view name = "logits_bf16", schedule = "logits_bf16";
  static constexpr bool cpu_only = true;
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(panel_input("w", shape(d_model, vocab), 1, bf16)) w = panel_input("w", shape(d_model, vocab), 1, bf16);
  decltype(input("b", shape(vocab))) b = input("b", shape(vocab));

  auto inputs() const { return hana::make_tuple(x, w, b); }
  auto outputs() const { return hana::make_tuple(result("out", bf16_linear("logits", x, w, b))); }
};

// Q, K and V (or a subset) in head layout, x rounded once for all of them.
// Weights (d_model, d_k, heads), biases (d_k, heads).
struct head_projection_bf16 {
  static constexpr std::string_view schedule = "head_projection_bf16";
  static constexpr bool cpu_only = true;
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  static auto weight(const std::string& n) { return panel_input(n, shape(d_model, d_k, heads), 1, bf16); }
  static auto bias(const std::string& n) { return input(n, shape(d_k, heads)); }

  // which: "q", "k" or "v"; inputs "w_<which>", "b_<which>"; stage "<which>_proj".
  auto projection(const std::string& which) const {
    return result(which, bf16_linear(which + "_proj", to_bfloat16("x_bf16", x), weight("w_" + which),
                                     bias("b_" + which), shape(d_k, t, heads, batch)));
  }
  template <class... W> static auto weights_of(const W&... which) {
    return hana::make_tuple(weight(std::string("w_") + which)..., bias(std::string("b_") + which)...);
  }
};
struct qkv_projection_bf16 : head_projection_bf16 {
  static constexpr std::string_view name = "qkv_projection_bf16";
  auto inputs() const { return hana::prepend(weights_of("q", "k", "v"), x); }
  auto outputs() const { return hana::make_tuple(projection("q"), projection("k"), projection("v")); }
};
struct kv_projection_bf16 : head_projection_bf16 {
  static constexpr std::string_view name = "kv_projection_bf16";
  auto inputs() const { return hana::prepend(weights_of("k", "v"), x); }
  auto outputs() const { return hana::make_tuple(projection("k"), projection("v")); }
};
struct q_projection_bf16 : head_projection_bf16 {
  static constexpr std::string_view name = "q_projection_bf16";
  auto inputs() const { return hana::prepend(weights_of("q"), x); }
  auto outputs() const { return hana::make_tuple(projection("q")); }
};

// Merge heads, project, add bias and the residual. Weights (d_k, heads, d_model).
struct out_projection_bf16 {
  static constexpr std::string_view name = "out_projection_bf16", schedule = "out_projection_bf16";
  static constexpr bool cpu_only = true;
  decltype(input("a", shape(d_k, t, heads, batch))) a = input("a", shape(d_k, t, heads, batch));
  decltype(panel_input("w", shape(d_k, heads, d_model), 2, bf16)) w =
      panel_input("w", shape(d_k, heads, d_model), 2, bf16);
  decltype(input("b", shape(d_model))) b = input("b", shape(d_model));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));

  auto algorithm() const {
    return add("residual_add", residual, bf16_linear("proj", a, w, b, shape(d_model, t, batch)));
  }
  auto inputs() const { return hana::make_tuple(a, w, b, residual); }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// residual + W2 act(W1 x + b1) + b2, the activated hidden layer rounded to
// bfloat16 before the second GEMM. Weights (d_model, d_ff) and (d_ff, d_model).
struct ffn_bf16 {
  static constexpr std::string_view schedule = "ffn_bf16";
  static constexpr bool cpu_only = true;
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));
  decltype(panel_input("w1", shape(d_model, d_ff), 1, bf16)) w1 = panel_input("w1", shape(d_model, d_ff), 1, bf16);
  decltype(input("b1", shape(d_ff))) b1 = input("b1", shape(d_ff));
  decltype(panel_input("w2", shape(d_ff, d_model), 1, bf16)) w2 = panel_input("w2", shape(d_ff, d_model), 1, bf16);
  decltype(input("b2", shape(d_model))) b2 = input("b2", shape(d_model));

  auto algorithm(op::activation act) const {
    auto hidden = activate("hidden_act", act, bf16_linear("hidden", x, w1, b1));
    return add("residual_add", residual, bf16_linear("proj", hidden, w2, b2));
  }
  auto inputs() const { return hana::make_tuple(x, residual, w1, b1, w2, b2); }
};
struct ffn_relu_bf16 : ffn_bf16 {
  static constexpr std::string_view name = "ffn_relu_bf16";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::relu))); }
};
struct ffn_gelu_bf16 : ffn_bf16 {
  static constexpr std::string_view name = "ffn_gelu_bf16";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::gelu))); }
};
struct ffn_silu_bf16 : ffn_bf16 {
  static constexpr std::string_view name = "ffn_silu_bf16";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::silu))); }
};

} // namespace halformer::dsl::kernels
