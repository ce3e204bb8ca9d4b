// bfloat16 GEMMs in the expression graph: float32 rounded to bfloat16, and
// bf16_linear, which states a bfloat16 GEMM once (dsl/README.md, "bfloat16").
// The nodes are expr.hpp's ops; lower.hpp lowers them.
#pragma once

#include "halformer/dsl/quantize.hpp"

namespace halformer::dsl {

// x's values rounded to bfloat16 (8 significant bits), to nearest even.
template <Tensor X> auto to_bfloat16(std::string name, X x) {
  static_assert(all_float_v<X>, "halformer::dsl::to_bfloat16: x must be float32");
  return make<element<dtype::bf16>>(op::to_bfloat16{std::move(name)}, shape_t<X>{}, std::move(x));
}

// y = x . W + bias with bfloat16 weights W of the dot-product layout's shape (a
// weight row is one output's inputs, as quantized_linear's), stored in panels
// (panel_input) or as they are: x rounded to bfloat16, each product of two
// bfloat16 values exact in float32, summed in float32 (vdpbf16ps sums pairs),
// the bias added in float32. Shapes as quantized_linear's. Stages:
// <name> (the float32 sums), <name>_biased; rounding x here adds <name>_x.
template <Tensor X, Tensor W, Tensor Bias, class Out> auto bf16_linear(std::string name, X x, W w, Bias bias, Out out) {
  if constexpr (dtype_v<X> == dtype::f32) {
    return bf16_linear(name, to_bfloat16(name + "_x", std::move(x)), std::move(w), std::move(bias), out);
  } else {
    static_assert(dtype_v<X> == dtype::bf16 && dtype_v<W> == dtype::bf16,
                  "halformer::dsl::bf16_linear: the weight must be bfloat16, and x float32 or bfloat16");
    static_assert(dot_product_weight_v<X, W>,
                  "halformer::dsl::bf16_linear: the weight's leading (input) dimensions must be the features it "
                  "shares with the input, and the input's dim 0 one of them");
    static_assert(is_permutation_v<Out, linear_shape_t<X, W>>,
                  "halformer::dsl::bf16_linear: the result must hold exactly the weight's output dimensions and the "
                  "input's rows");
    static_assert(std::is_same_v<shape_t<Bias>, weight_outputs_t<X, W>> && all_float_v<Bias>,
                  "halformer::dsl::bf16_linear: the bias must be float32 with the weight's output dimensions");
    return add_broadcast(name + "_biased", contract(name, std::move(x), std::move(w), out), std::move(bias));
  }
}
template <Tensor X, Tensor W, Tensor Bias> auto bf16_linear(std::string name, X x, W w, Bias bias) {
  return bf16_linear(std::move(name), std::move(x), std::move(w), std::move(bias), linear_shape_t<X, W>{});
}

} // namespace halformer::dsl
