// expect: add: operands must be float32 \(dequantize an integer one first\)
#include "halformer/dsl/quantize.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto q = quantize("q", x, quant_step("step", x)); // int8
  (void)add("sum", x, q);
}
