// The int8, bfloat16 and float16 kernels' problems (int8_problems.cpp,
// bf16_problems.cpp, f16_problems.cpp),
// for kernel_problems.cpp's table.
#pragma once

#include "halformer/problems.hpp"

#include <string>

namespace halformer::problems::int8 {

problem logits(shape_args& s);
problem head_projection(shape_args& s, const std::string& which); // which: e.g. "qkv"
problem out_projection(shape_args& s);
problem ffn(shape_args& s, ref::activation act);
problem embedding(shape_args& s);

} // namespace halformer::problems::int8

namespace halformer::problems::bf16 {

problem logits(shape_args& s);
problem head_projection(shape_args& s, const std::string& which);
problem out_projection(shape_args& s);
problem ffn(shape_args& s, ref::activation act);

} // namespace halformer::problems::bf16

namespace halformer::problems::f16 {

problem kv_to_float16(shape_args& s);

} // namespace halformer::problems::f16
