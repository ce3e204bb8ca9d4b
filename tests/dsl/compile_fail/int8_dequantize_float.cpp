// expect: dequantize: the accumulation must be int32
#include "halformer/dsl/quantize.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_ff, d_model));
  auto y = contract("y", x, w, shape(d_ff, t, batch)); // float32: nothing to dequantize
  (void)dequantize("dq", y, input("rows", shape(t, batch)), input("cols", shape(d_ff)));
}
