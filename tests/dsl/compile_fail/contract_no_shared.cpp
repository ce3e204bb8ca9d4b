// expect: contract: the operands share no dimension to contract over
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto a = input("a", shape(d_model, t));
  auto b = input("b", shape(d_ff, vocab));
  (void)contract("c", a, b, shape(d_model, t, d_ff, vocab));
}
