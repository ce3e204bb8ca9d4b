// expect: transpose: the result must be a permutation
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t));
  (void)transpose("xt", x, shape(t, d_model, batch));
}
