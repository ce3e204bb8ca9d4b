// expect: bf16_linear: the weight must be bfloat16
#include "halformer/dsl/bfloat16.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_model, d_ff)); // float32: a bfloat16 GEMM's weight must be bfloat16
  auto b = input("b", shape(d_ff));
  (void)bf16_linear("y", x, w, b);
}
