// The int8 kernels' problems (int8_problems.cpp), for kernel_problems.cpp's table.
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
