// expect: an int8 operand with a float one
#include "halformer/dsl/quantize.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch)); // float32 activations
  auto w = input("w", shape(d_ff, d_model), i8); // int8 weights, never quantized against
  (void)contract("y", x, w, shape(d_ff, t, batch));
}
