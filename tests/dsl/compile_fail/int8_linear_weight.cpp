// expect: linear: x, the weight and the bias must be float32 \(int8 weights: quantized_linear\)
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_model, d_ff), i8);
  auto b = input("b", shape(d_ff));
  (void)linear("y", x, w, b);
}
