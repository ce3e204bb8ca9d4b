// A kernel built as several variants, one per shape bucket (each compiled with the
// knobs tuned for that bucket, each a multi-ISA Halide function hf_<k>__<bucket>),
// gets a C dispatcher hf_<k> with the variants' exact signature: it reads the
// shape of the kernel's first output buffer and runs the variant for its bucket
// (runtime/kernels/variants.c). Used by the build (CMake) and by `build-lib`.
#pragma once

#include <string>
#include <vector>

namespace halformer::tuner {

// Reads `dir`/<function>__<buckets[0]>.h (as Halide wrote it) and writes
// `dir`/<function>.h (the same declarations under the kernel's own name) and
// `dir`/<function>_dispatch.c. `kernel` names the kernel in variant statistics.
void write_dispatcher(const std::string& dir, const std::string& function, const std::string& kernel,
                      const std::vector<std::string>& buckets);

} // namespace halformer::tuner
