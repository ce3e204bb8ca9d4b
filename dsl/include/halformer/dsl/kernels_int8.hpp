// The int8 kernels: the float kernels' arithmetic with int8 weights. Weights are
// quantized at load with one step per output (w_step, or <w>_step); their logical
// shape is the dot-product layout (a weight row is one output's inputs, PyTorch's
// [out][in] as it is), stored in panels of 16 outputs (panels.hpp, panel_input).
// Inputs are quantized per row (t, batch) once per kernel, products summed
// exactly in int32, then dequantized, biased and activated in float32
// (dsl::quantized_linear). LayerNorm, softmax and attention stay float32 (an
// int8 model's decoder keeps its keys and values in float16 on the CPU:
// kernels_attention.hpp). Part of kernels.hpp's registry.
#pragma once

#include "halformer/dsl/quantize.hpp"

namespace halformer::dsl::kernels {

using namespace dims;

// The logits, one step per vocabulary entry.
struct logits_int8 {
  static constexpr std::string_view name = "logits_int8", schedule = "logits_int8";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(panel_input("w", shape(d_model, vocab), 1)) w = panel_input("w", shape(d_model, vocab), 1);
  decltype(input("w_step", shape(vocab))) w_step = input("w_step", shape(vocab));
  decltype(input("b", shape(vocab))) b = input("b", shape(vocab));

  auto inputs() const { return hana::make_tuple(x, w, w_step, b); }
  auto outputs() const { return hana::make_tuple(result("out", quantized_linear("logits", x, w, w_step, b))); }
};

// The embedding with an int8 table in panels, one step per vocabulary entry (a
// token's row quantized at load as the GEMM weights are: a tied table is the
// logits' weight and steps); the same stages as embedding's. The steps' extent
// is the vocabulary's (the panels pad it); d_model is an argument, since int8
// panels store 4 inputs per line and so pad it too.
struct embedding_int8 {
  static constexpr std::string_view name = "embedding_int8", schedule = "embedding";
  decltype(panel_input("table", shape(d_model, vocab), 1, i8)) table =
      panel_input("table", shape(d_model, vocab), 1, i8);
  decltype(input("table_step", shape(vocab))) table_step = input("table_step", shape(vocab));
  decltype(input("ids", shape(t, batch), i32)) ids = input("ids", shape(t, batch), i32);
  decltype(extent_param(d_model)) width = extent_param(d_model);
  decltype(param("scale")) scale = param("scale");
  decltype(param("offset", i32)) offset = param("offset", i32);
  decltype(param("split_positions", boolean)) split_positions = param("split_positions", boolean);

  auto algorithm() const {
    return add_broadcast("embedding", dsl::scale("scaled", gather("rows", table, table_step, ids), scale),
                         sinusoidal("positions", d_model, t, offset, split_positions));
  }
  auto inputs() const { return hana::make_tuple(table, table_step, ids, width, scale, offset, split_positions); }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// Q, K and V (or a subset) in head layout, x quantized once for all of them.
// Weights (d_model, d_k, heads), steps and biases (d_k, heads).
struct head_projection_int8 {
  static constexpr std::string_view schedule = "head_projection_int8";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  static auto weight(const std::string& n) { return panel_input(n, shape(d_model, d_k, heads), 1); }
  static auto step(const std::string& n) { return input(n, shape(d_k, heads)); }
  static auto bias(const std::string& n) { return input(n, shape(d_k, heads)); }

  // which: "q", "k" or "v"; inputs "w_<which>", "w_<which>_step", "b_<which>"; stage "<which>_proj".
  auto projection(const std::string& which) const {
    auto xq = quantize_rows("x_quantized", x, shape(t, batch));
    return result(which, quantized_linear(which + "_proj", xq, weight("w_" + which), step("w_" + which + "_step"),
                                          bias("b_" + which), shape(d_k, t, heads, batch)));
  }
  template <class... W> static auto weights_of(const W&... which) {
    return hana::make_tuple(weight(std::string("w_") + which)..., step(std::string("w_") + which + "_step")...,
                            bias(std::string("b_") + which)...);
  }
};
struct qkv_projection_int8 : head_projection_int8 {
  static constexpr std::string_view name = "qkv_projection_int8";
  auto inputs() const { return hana::prepend(weights_of("q", "k", "v"), x); }
  auto outputs() const { return hana::make_tuple(projection("q"), projection("k"), projection("v")); }
};
struct kv_projection_int8 : head_projection_int8 {
  static constexpr std::string_view name = "kv_projection_int8";
  auto inputs() const { return hana::prepend(weights_of("k", "v"), x); }
  auto outputs() const { return hana::make_tuple(projection("k"), projection("v")); }
};
struct q_projection_int8 : head_projection_int8 {
  static constexpr std::string_view name = "q_projection_int8";
  auto inputs() const { return hana::prepend(weights_of("q"), x); }
  auto outputs() const { return hana::make_tuple(projection("q")); }
};

// Merge heads, project, add bias and the residual; a row of the heads' output
// (all heads at one position) is quantized as one. Weights (d_k, heads, d_model).
struct out_projection_int8 {
  static constexpr std::string_view name = "out_projection_int8", schedule = "out_projection_int8";
  decltype(input("a", shape(d_k, t, heads, batch))) a = input("a", shape(d_k, t, heads, batch));
  decltype(panel_input("w", shape(d_k, heads, d_model), 2)) w = panel_input("w", shape(d_k, heads, d_model), 2);
  decltype(input("w_step", shape(d_model))) w_step = input("w_step", shape(d_model));
  decltype(input("b", shape(d_model))) b = input("b", shape(d_model));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));

  auto algorithm() const {
    return add("residual_add", residual, quantized_linear("proj", a, w, w_step, b, shape(d_model, t, batch)));
  }
  auto inputs() const { return hana::make_tuple(a, w, w_step, b, residual); }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};

// residual + W2 act(W1 x + b1) + b2, the activated hidden layer quantized per row
// before the second GEMM. Weights (d_model, d_ff) and (d_ff, d_model).
struct ffn_int8 {
  static constexpr std::string_view schedule = "ffn_int8";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));
  decltype(panel_input("w1", shape(d_model, d_ff), 1)) w1 = panel_input("w1", shape(d_model, d_ff), 1);
  decltype(input("w1_step", shape(d_ff))) w1_step = input("w1_step", shape(d_ff));
  decltype(input("b1", shape(d_ff))) b1 = input("b1", shape(d_ff));
  decltype(panel_input("w2", shape(d_ff, d_model), 1)) w2 = panel_input("w2", shape(d_ff, d_model), 1);
  decltype(input("w2_step", shape(d_model))) w2_step = input("w2_step", shape(d_model));
  decltype(input("b2", shape(d_model))) b2 = input("b2", shape(d_model));

  auto algorithm(op::activation act) const {
    auto hidden = activate("hidden_act", act, quantized_linear("hidden", x, w1, w1_step, b1));
    return add("residual_add", residual, quantized_linear("proj", hidden, w2, w2_step, b2));
  }
  auto inputs() const { return hana::make_tuple(x, residual, w1, w1_step, b1, w2, w2_step, b2); }
};
struct ffn_relu_int8 : ffn_int8 {
  static constexpr std::string_view name = "ffn_relu_int8";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::relu))); }
};
struct ffn_gelu_int8 : ffn_int8 {
  static constexpr std::string_view name = "ffn_gelu_int8";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::gelu))); }
};
struct ffn_silu_int8 : ffn_int8 {
  static constexpr std::string_view name = "ffn_silu_int8";
  auto outputs() const { return hana::make_tuple(result("out", algorithm(op::activation::silu))); }
};

} // namespace halformer::dsl::kernels
