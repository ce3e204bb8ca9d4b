// expect: ^$
// The control case: the same includes and well-shaped expressions compile, so a
// compile-fail test fails only for its shape error.
#include "halformer/dsl/layers.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_ff, d_model));
  auto b = input("b", shape(d_ff));
  (void)add("s", x, x);
  (void)linear("y", x, w, b);
  (void)layers::encoder_layer(hana::true_c, "relu");
}
