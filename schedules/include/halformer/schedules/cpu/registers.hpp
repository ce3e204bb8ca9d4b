// The vector register file a CPU schedule budgets its register tiles in.
#pragma once

#include <Halide.h>

namespace halformer::schedules::cpu {

// 32 with AVX-512 (zmm0-31) and on AArch64 (v0-v31, NEON's 4 float32 lanes
// each), 16 with AVX2 and SSE4.1 (ymm / xmm 0-15).
inline int vector_registers(const Halide::Target& target) {
  return target.has_feature(Halide::Target::AVX512) || target.arch == Halide::Target::ARM ? 32 : 16;
}

} // namespace halformer::schedules::cpu
