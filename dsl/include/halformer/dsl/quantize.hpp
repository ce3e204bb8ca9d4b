// int8 quantization in the expression graph: per-row steps, int8 values, the
// dequantization of int32 accumulations, and quantized_linear, which states the
// whole quantized GEMM once (dsl/README.md, "int8"). The nodes are expr.hpp's
// ops; lower.hpp lowers them.
#pragma once

#include "halformer/dsl/expr.hpp"

namespace halformer::dsl {

// ---- int8 quantization ---------------------------------------------------------------

// Symmetric int8 quantization per row, as CTranslate2 quantizes activations: a
// row is one position along `Rows` (dimensions of x) and all of x's other
// dimensions (its features); its step is max |x| / 127 over them. Without `Rows`,
// dim 0 alone is the features.
template <Tensor X, class Rows> auto quant_step(std::string name, X x, Rows rows) {
  static_assert(all_float_v<X>, "halformer::dsl::quant_step: x must be float32");
  static_assert(is_subset_v<Rows, shape_t<X>> && rank_v<Rows> < rank_v<shape_t<X>>,
                "halformer::dsl::quant_step: the rows must be some of x's dimensions, not all of them");
  return make(op::quant_step{std::move(name)}, rows, std::move(x));
}
template <Tensor X> auto quant_step(std::string name, X x) {
  static_assert(rank_v<shape_t<X>> >= 1, "halformer::dsl::quant_step: needs a dimension to take rows along");
  return quant_step(std::move(name), std::move(x), hana::drop_front(shape_t<X>{}));
}

// x's int8 values: clamp(round_half_even(x * (1 / step)), -127, 127) with the row's
// step (quant_step); -128 never occurs, so every product of two is at most 127^2
// in magnitude.
template <Tensor X, Tensor S> auto quantize(std::string name, X x, S step) {
  static_assert(is_subset_v<shape_t<S>, shape_t<X>> && rank_v<shape_t<S>> < rank_v<shape_t<X>>,
                "halformer::dsl::quantize: the step must be indexed by some of x's dimensions (its rows)");
  static_assert(all_float_v<X, S>, "halformer::dsl::quantize: x and its step must be float32");
  return make<element<dtype::i8>>(op::quantize{std::move(name)}, shape_t<X>{}, std::move(x), std::move(step));
}

// A tensor quantized per row: its int8 values and each row's step.
template <Tensor Q, Tensor S> struct quantized {
  Q values;
  S step;
};
// x quantized per row, the rows along `Rows`. Stages: <name> (the int8 values),
// <name>_step and <name>_step_max. One quantized input can feed several
// quantized_linear (the q, k and v projections of one x).
template <Tensor X, class Rows> auto quantize_rows(std::string name, X x, Rows rows) {
  auto step = quant_step(name + "_step", x, rows);
  auto values = quantize(name, std::move(x), step);
  return quantized<decltype(values), decltype(step)>{std::move(values), std::move(step)};
}

// The float value of an int32 accumulation of int8 products: acc x its row's step
// x its column's step, the steps together indexing each dimension of acc once.
template <Tensor A, Tensor R, Tensor C> auto dequantize(std::string name, A acc, R row_step, C col_step) {
  using SA = shape_t<A>;
  static_assert(dtype_v<A> == dtype::i32, "halformer::dsl::dequantize: the accumulation must be int32");
  static_assert(all_float_v<R, C>, "halformer::dsl::dequantize: the steps must be float32");
  static_assert(is_permutation_v<decltype(hana::concat(shape_t<R>{}, shape_t<C>{})), SA>,
                "halformer::dsl::dequantize: the row and column steps must index every dimension of the "
                "accumulation once");
  return make(op::dequantize{std::move(name)}, SA{}, std::move(acc), std::move(row_step), std::move(col_step));
}

// contract's exact int32 sums of int8 x and int8 w, given the sums of the
// weight's values over its inputs, one per output (w_sums, int32, computed
// where the weights are quantized). They let the lowering offset x by 128 to
// unsigned bytes, the operand vpdpbusd takes unsigned, and take the offset back
// out exactly: sum (x + 128) w - 128 sum w = sum x w (lower_quantize.hpp). W is
// in the dot-product layout (expr.hpp: linear).
template <Tensor X, Tensor W, Tensor WSums, class Out>
auto int8_contract(std::string name, X x, W w, WSums w_sums, Out out) {
  static_assert(dtype_v<X> == dtype::i8 && dtype_v<W> == dtype::i8,
                "halformer::dsl::int8_contract: the input and the weight must be int8");
  static_assert(dot_product_weight_v<X, W>,
                "halformer::dsl::int8_contract: the weight's leading (input) dimensions must be the features it "
                "shares with the input, and the input's dim 0 one of them");
  static_assert(dtype_v<WSums> == dtype::i32 && std::is_same_v<shape_t<WSums>, weight_outputs_t<X, W>>,
                "halformer::dsl::int8_contract: the weight's sums are int32, one per output (the weight's output "
                "dimensions)");
  (void)contract(name, x, w, out); // the same checks as a plain contraction
  return make<element<dtype::i32>>(op::contract{std::move(name), op::contract_third::int8_weight_sums}, out,
                                   std::move(x), std::move(w), std::move(w_sums));
}

// An int8 weight as quantized_linear takes it: its values W, in the dot-product
// layout (expr.hpp: linear), which int8 instructions read (pmaddwd sums adjacent
// pairs, vpdpbusd quads); their step per output (W's output dimensions), by which
// a value times its step is the float weight; and the values' sum per output
// (int8_contract).
template <Tensor W, Tensor Step, Tensor Sums> struct int8_weight {
  W values;
  Step step;
  Sums sums;
};
template <Tensor W, Tensor Step, Tensor Sums> auto make_int8_weight(W w, Step step, Sums sums) {
  return int8_weight<W, Step, Sums>{std::move(w), std::move(step), std::move(sums)};
}

// y = x . W + bias with an int8 weight (int8_weight): x quantized per row, the
// products accumulated exactly in int32 (int8_contract), dequantized, the bias
// added in float32. The features are the dimensions x and W share (d_model; the
// out projection's d_k and heads), x's rows its others. Stages: <name> (the
// int32 accumulation), <name>_dequantized, <name>_biased; quantizing x here adds
// <name>_x, <name>_x_step, <name>_x_step_max.

template <Tensor Q, Tensor S, Tensor W, Tensor WS, Tensor WSums, Tensor Bias, class Out>
auto quantized_linear(std::string name, quantized<Q, S> x, int8_weight<W, WS, WSums> w, Bias bias, Out out) {
  static_assert(dot_product_weight_v<Q, W>,
                "halformer::dsl::quantized_linear: the weight's leading (input) dimensions must be the features it "
                "shares with the input, and the input's dim 0 one of them");
  static_assert(std::is_same_v<shape_t<S>, input_rows_t<Q, W>>,
                "halformer::dsl::quantized_linear: the input's step must index its rows (the dimensions the "
                "weight lacks)");
  static_assert(is_permutation_v<Out, linear_shape_t<Q, W>>,
                "halformer::dsl::quantized_linear: the result must hold exactly the weight's output dimensions and "
                "the input's rows");
  static_assert(std::is_same_v<shape_t<Bias>, weight_outputs_t<Q, W>> && std::is_same_v<shape_t<WS>, shape_t<Bias>>,
                "halformer::dsl::quantized_linear: the bias and the weight's step must have its output dimensions");
  static_assert(dtype_v<W> == dtype::i8, "halformer::dsl::quantized_linear: the weight must be int8");
  auto acc = int8_contract(name, std::move(x.values), std::move(w.values), std::move(w.sums), out);
  return add_broadcast(name + "_biased",
                       dequantize(name + "_dequantized", std::move(acc), std::move(x.step), std::move(w.step)),
                       std::move(bias));
}
template <Tensor Q, Tensor S, Tensor W, Tensor WS, Tensor WSums, Tensor Bias>
auto quantized_linear(std::string name, quantized<Q, S> x, int8_weight<W, WS, WSums> w, Bias bias) {
  return quantized_linear(std::move(name), std::move(x), std::move(w), std::move(bias), linear_shape_t<Q, W>{});
}
// The same of a float x, quantized here.
template <Tensor X, Tensor W, Tensor WS, Tensor WSums, Tensor Bias, class Out>
auto quantized_linear(std::string name, X x, int8_weight<W, WS, WSums> w, Bias bias, Out out) {
  auto q = quantize_rows(name + "_x", std::move(x), input_rows_t<X, W>{});
  return quantized_linear(std::move(name), std::move(q), std::move(w), std::move(bias), out);
}
template <Tensor X, Tensor W, Tensor WS, Tensor WSums, Tensor Bias>
auto quantized_linear(std::string name, X x, int8_weight<W, WS, WSums> w, Bias bias) {
  return quantized_linear(std::move(name), std::move(x), std::move(w), std::move(bias), linear_shape_t<X, W>{});
}

// Embedding rows of an int8 table (d, vocab), quantized per row (one step per
// vocabulary entry): float(table(:, id)) * step(id), the ids checked as gather's.
template <Tensor Table, Tensor Step, Tensor Ids> auto gather(std::string name, Table table, Step step, Ids ids) {
  static_assert(rank_v<shape_t<Table>> == 2 && dtype_v<Table> == dtype::i8,
                "halformer::dsl::gather: a quantized table is int8 (d, vocab)");
  static_assert(std::is_same_v<shape_t<Step>, decltype(hana::drop_front(shape_t<Table>{}))> && all_float_v<Step>,
                "halformer::dsl::gather: a quantized table's steps are float32, one per vocabulary entry");
  static_assert(dtype_v<Ids> == dtype::i32, "halformer::dsl::gather: the ids are int32");
  using Out = decltype(hana::prepend(shape_t<Ids>{}, hana::front(shape_t<Table>{})));
  return make(op::gather{std::move(name)}, Out{}, std::move(table), std::move(ids), std::move(step));
}

} // namespace halformer::dsl
