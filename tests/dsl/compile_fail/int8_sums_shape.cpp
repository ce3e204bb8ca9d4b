// expect: the weight's sums are int32, one per output
#include "halformer/dsl/quantize.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_model, d_ff), i8);
  auto sums = input("w_sums", shape(d_model), i32); // per input, not per output
  (void)quantized_linear("y", x, make_int8_weight(w, input("w_step", shape(d_ff)), sums), input("b", shape(d_ff)));
}
