// float16 storage in the expression graph: float32 rounded to float16, for tensors
// that are written once and read many times (attention's keys and values: a
// decode step reads every cached position, so half the bytes is half the time of
// a memory-bound step). float16 keeps 11 significant bits (relative error 2^-12,
// eight times finer than bfloat16's), which keys and values of LayerNorm'd
// inputs use well within its range; beyond +-65504 a value saturates rather than
// becoming infinite, so a softmax never meets inf - inf.
#pragma once

#include "halformer/dsl/expr.hpp"

namespace halformer::dsl {

// x's values rounded to float16, to nearest even, clamped to +-65504.
template <Tensor X> auto to_float16(std::string name, X x) {
  static_assert(all_float_v<X>, "halformer::dsl::to_float16: x must be float32");
  return make<element<dtype::f16>>(op::to_float16{std::move(name)}, shape_t<X>{}, std::move(x));
}

} // namespace halformer::dsl
