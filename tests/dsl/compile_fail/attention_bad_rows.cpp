// expect: attention: kv_rows must be \(tk, batch\)
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  auto q = input("q", shape(d_k, t, heads, batch));
  auto k = input("k", shape(d_k, tk, heads, kv_row));
  auto rows = input("rows", shape(t, batch), i32); // per query, not per key
  auto l = input("l", shape(batch), i32);
  (void)attention("a", q, k, k, rows, l, param("c"), param("o"), param("s"), param("w"));
}
