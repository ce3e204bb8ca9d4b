// expect: inconsistent wiring
#include "halformer/dsl/layers.hpp"
using namespace halformer::dsl;
using namespace halformer::dsl::dims;
using namespace halformer::dsl::layers;
int main() {
  kernels::ffn_relu f;
  // x over target positions but the residual over source positions: the kernel's
  // t would stand for both tgt and src.
  (void)run_variant(f, "ffn_relu", f.x >> ref("y", shape(d_model, tgt, batch)),
                    f.residual >> ref("memory", shape(d_model, src, batch)));
}
