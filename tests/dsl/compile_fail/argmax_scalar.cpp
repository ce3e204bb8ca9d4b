// expect: argmax: needs a dimension to reduce
#include "halformer/dsl/expr.hpp"
using namespace halformer::dsl;
int main() {
  auto p = param("p");
  (void)argmax("best", p);
}
