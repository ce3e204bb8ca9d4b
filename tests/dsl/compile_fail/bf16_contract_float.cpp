// expect: a bfloat16 operand with a float32 one: to_bfloat16 the float32 operand
#include "halformer/dsl/bfloat16.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));   // float32 activations, never rounded
  auto w = input("w", shape(d_model, d_ff), bf16); // bfloat16 weights
  (void)contract("y", x, w, shape(d_ff, t, batch));
}
