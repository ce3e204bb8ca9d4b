// expect: linear: the weight's leading \(input\) dimensions must be the features it shares with the input
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_k, d_ff)); // contracts over d_k, but x's features are d_model
  auto b = input("b", shape(d_ff));
  (void)linear("y", x, w, b);
}
