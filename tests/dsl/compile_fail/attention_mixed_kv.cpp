// expect: k and v both float32 or both float16
#include "halformer/dsl/float16.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
int main() {
  (void)attention("a", input("q", shape(d_k, t, heads, batch)), input("k", shape(d_k, tk, heads, kv_row), f16),
                  input("v", shape(d_k, tk, heads, kv_row)), input("r", shape(tk, batch), i32),
                  input("l", shape(batch), i32), param("c", boolean), param("o", i32), param("s", boolean),
                  param("w", boolean));
}
