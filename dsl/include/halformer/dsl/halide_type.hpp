// The Halide element type of each DSL element type: the one mapping, used by the
// generator (as Halide::Type) and by the runtime's by-name binding (as the
// metadata's halide_type_t).
#pragma once

#include "halformer/dsl/ops.hpp"

#include <HalideRuntime.h>

namespace halformer::dsl {

constexpr halide_type_t halide_type_of(dtype t) {
  switch (t) {
  case dtype::i32:
    return {halide_type_int, 32};
  case dtype::i8:
    return {halide_type_int, 8};
  case dtype::bf16:
    return {halide_type_bfloat, 16};
  case dtype::f16:
    return {halide_type_float, 16};
  case dtype::boolean:
    return {halide_type_uint, 1};
  case dtype::f32:
    break;
  }
  return {halide_type_float, 32};
}

} // namespace halformer::dsl
