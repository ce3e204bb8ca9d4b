// expect: contract: a dimension of only one operand is missing from the result
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto a = input("a", shape(d_model, t));
  auto b = input("b", shape(d_model, d_ff));
  (void)contract("c", a, b, shape(t)); // d_ff silently summed away
}
