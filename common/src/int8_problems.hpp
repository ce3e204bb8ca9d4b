// The int8 embedding's and the float16 conversion's problems (int8_problems.cpp,
// f16_problems.cpp) for kernel_problems.cpp's table, and the int8 weights'
// random steps and value sums for the GEMM problems (gemm_problems.cpp).
#pragma once

#include "halformer/problems.hpp"

#include <string>

namespace halformer::problems::int8 {

// An int8 weight's random steps, one per output (extents `outputs`), near 1 /
// (127 sqrt(inputs)) as the loader makes them for float weights of scale 1 / sqrt(inputs).
fb random_steps(std::vector<int> outputs, int inputs);
// The sum of each output's values (extents `outputs`) of the dense int8 weight
// `w`, whose first `inputs` elements are output 0's: the GEMMs' "<w>_sums".
ib weight_sums(const i8b& w, int inputs, std::vector<int> outputs);
problem embedding(shape_args& s);

} // namespace halformer::problems::int8

namespace halformer::problems::f16 {

problem kv_to_float16(shape_args& s);

} // namespace halformer::problems::f16
