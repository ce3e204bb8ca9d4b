// expect: layernorm: gamma and beta must be indexed by the input's dim 0
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto g = input("g", shape(d_ff));
  (void)layernorm("n", x, g, g, param("eps"));
}
