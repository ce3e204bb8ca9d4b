// expect: add: operands must be float32
#include "halformer/dsl/float16.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_k, t, heads, batch));
  (void)add("y", to_float16("x_f16", x), x); // float16 storage meets float32 without widening
}
