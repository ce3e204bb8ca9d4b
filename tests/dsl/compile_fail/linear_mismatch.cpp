// expect: linear: the weight's first or last \(input\) dimension must be the input's dim 0
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_ff, d_k)); // contracts over d_k, but x's features are d_model
  auto b = input("b", shape(d_ff));
  (void)linear("y", x, w, b);
}
