// Every halformer kernel, written once as a DSL expression over formal operands.
//
// A kernel is a struct whose members are its operand leaves (names and shapes are
// its ABI) and whose algorithm() builds the expression. Generators lower it; layer
// descriptions (layers.hpp) wire kernels by these signatures; the runtime walks
// them. Stage names given here are the names schedules refer to.
#pragma once

#include "halformer/dsl/expr.hpp"

namespace halformer::dsl::kernels {

using namespace dims;

// token ids -> table(id) * scale + PE(t + offset)
struct embedding {
  static constexpr std::string_view name = "embedding";
  decltype(input("table", shape(d_model, vocab))) table = input("table", shape(d_model, vocab));
  decltype(input("ids", shape(t, batch))) ids = input("ids", shape(t, batch), dtype::i32);
  decltype(param("scale")) scale = param("scale");
  decltype(param("offset")) offset = param("offset", dtype::i32);

  auto algorithm() const {
    return add_broadcast("embedding", dsl::scale("scaled", gather("rows", table, ids), scale),
                         sinusoidal("positions", d_model, t, offset));
  }
};

// Q, K and V (or a subset) of x, directly in head layout (d_k, t, heads, batch).
// Weights are (d_k, heads, d_model): PyTorch's [out][in] rows, transposed once at load.
struct head_projection {
  static constexpr std::string_view name = "head_projection";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  static auto weight(const std::string& n) { return input(n, shape(d_k, heads, d_model)); }
  static auto bias(const std::string& n) { return input(n, shape(d_k, heads)); }

  // which: "q", "k" or "v"; weights "w_<which>", biases "b_<which>", stage "<which>".
  auto algorithm(const std::string& which) const {
    return linear(which + "_proj", x, weight("w_" + which), bias("b_" + which), shape(d_k, t, heads, batch));
  }
};

struct attention {
  static constexpr std::string_view name = "attention";
  decltype(input("q", shape(d_k, t, heads, batch))) q = input("q", shape(d_k, t, heads, batch));
  decltype(input("k", shape(d_k, tk, heads, batch))) k = input("k", shape(d_k, tk, heads, batch));
  decltype(input("v", shape(d_k, tk, heads, batch))) v = input("v", shape(d_k, tk, heads, batch));
  decltype(input("lengths", shape(batch))) lengths = input("lengths", shape(batch), dtype::i32);
  decltype(param("causal")) causal = param("causal", dtype::boolean);
  decltype(param("offset")) offset = param("offset", dtype::i32);

  auto algorithm() const { return dsl::attention("attention", q, k, v, lengths, causal, offset); }
};

// Merge heads, project, add bias and the residual.
struct out_projection {
  static constexpr std::string_view name = "out_projection";
  decltype(input("a", shape(d_k, t, heads, batch))) a = input("a", shape(d_k, t, heads, batch));
  decltype(input("w", shape(d_model, d_k, heads))) w = input("w", shape(d_model, d_k, heads));
  decltype(input("b", shape(d_model))) b = input("b", shape(d_model));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));

  auto algorithm() const {
    auto proj = contract("proj", a, w, shape(d_model, t, batch));
    return add("residual_add", residual, add_broadcast("biased", proj, b));
  }
};

// residual + W2 act(W1 x + b1) + b2
struct ffn {
  static constexpr std::string_view name = "ffn";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));
  decltype(input("w1", shape(d_ff, d_model))) w1 = input("w1", shape(d_ff, d_model));
  decltype(input("b1", shape(d_ff))) b1 = input("b1", shape(d_ff));
  decltype(input("w2", shape(d_model, d_ff))) w2 = input("w2", shape(d_model, d_ff));
  decltype(input("b2", shape(d_model))) b2 = input("b2", shape(d_model));

  auto algorithm(op::activation act) const {
    auto hidden = activate("hidden_act", act, linear("hidden", x, w1, b1));
    return add("residual_add", residual, linear("proj", hidden, w2, b2));
  }
};

// LayerNorm over d_model, optionally of (x + residual).
struct layernorm {
  static constexpr std::string_view name = "layernorm";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(input("residual", shape(d_model, t, batch))) residual = input("residual", shape(d_model, t, batch));
  decltype(input("gamma", shape(d_model))) gamma = input("gamma", shape(d_model));
  decltype(input("beta", shape(d_model))) beta = input("beta", shape(d_model));
  decltype(param("eps")) eps = param("eps");

  auto algorithm() const { return dsl::layernorm("norm", x, gamma, beta, eps); }
  auto algorithm_with_residual() const { return dsl::layernorm("norm", add("sum", x, residual), gamma, beta, eps); }
};

// Row softmax (or log-softmax) over dim 0 of (tk, t, batch), with the attention masks.
struct softmax {
  static constexpr std::string_view name = "softmax";
  decltype(input("x", shape(tk, t, batch))) x = input("x", shape(tk, t, batch));
  decltype(input("lengths", shape(batch))) lengths = input("lengths", shape(batch), dtype::i32);
  decltype(param("causal")) causal = param("causal", dtype::boolean);
  decltype(param("offset")) offset = param("offset", dtype::i32);

  auto algorithm(bool log) const { return masked_softmax("softmax", x, lengths, causal, offset, log); }
};

// Final projection to the target vocabulary.
struct logits {
  static constexpr std::string_view name = "logits";
  decltype(input("x", shape(d_model, t, batch))) x = input("x", shape(d_model, t, batch));
  decltype(input("w", shape(vocab, d_model))) w = input("w", shape(vocab, d_model));
  decltype(input("b", shape(vocab))) b = input("b", shape(vocab));

  auto algorithm() const { return linear("logits", x, w, b); }
};

// Greedy decoding's choice per logits row: the best token (ties: the lowest id)
// and its log-probability, so that only two numbers per row leave the device.
struct greedy_pick {
  static constexpr std::string_view name = "greedy_pick";
  decltype(input("x", shape(vocab, t, batch))) x = input("x", shape(vocab, t, batch));

  auto ids() const { return argmax("pick_id", x); }
  auto log_probs() const { return max_log_prob("pick_log_prob", x); }
};

} // namespace halformer::dsl::kernels
