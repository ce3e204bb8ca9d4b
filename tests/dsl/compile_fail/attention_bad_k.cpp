// expect: attention: k must be \(d_k, tk, heads, kv_row\)
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto q = input("q", shape(d_k, t, heads, batch));
  auto k = input("k", shape(d_model, tk, heads, kv_row)); // heads not split
  auto rows = input("rows", shape(tk, batch), i32);
  auto l = input("l", shape(batch), i32);
  (void)attention("a", q, k, k, rows, l, param("c"), param("o"), param("s"), param("w"));
}
