// expect: add: operands must have the same dimensions in the same order
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto y = input("y", shape(d_ff, t, batch));
  (void)add("sum", x, y);
}
