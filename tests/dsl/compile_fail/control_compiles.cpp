// expect: ^$
// The control case: the same includes and well-shaped expressions compile, so a
// compile-fail test fails only for its shape error.
#include "halformer/dsl/layers.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_model, d_ff));
  auto b = input("b", shape(d_ff));
  (void)add("s", x, x);
  (void)linear("y", x, w, b);
  // the int8 control: a quantized linear, and an int8 contraction dequantized
  auto w8 = input("w8", shape(d_model, d_ff), i8);
  auto step = quant_step("step", x);
  (void)quantized_linear("q", x, make_int8_weight(w8, input("w_step", shape(d_ff)), input("w_sums", shape(d_ff), i32)),
                         b);
  (void)dequantize("dq", contract("acc", quantize("xq", x, step), w8, shape(d_ff, t, batch)), step,
                   input("w_step", shape(d_ff)));
  (void)layers::encoder_layer(hana::true_c, "relu");
}
