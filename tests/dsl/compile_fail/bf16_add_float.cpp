// expect: add: operands must be float32
#include "halformer/dsl/bfloat16.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  (void)add("y", to_bfloat16("x_bf16", x), x); // bfloat16 meets float32 without a GEMM between
}
