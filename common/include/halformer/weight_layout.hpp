// How a bfloat16 GEMM weight lies in memory, one definition for the runtime
// (which loads models so) and the measuring problems (so that tuning, `compare`
// and the kernel benchmarks time the layout models run with). Every GEMM weight
// lies in panels of 16 outputs (dsl/panels.hpp): float32 one input per lane,
// bfloat16 two (a 64-byte line holds a pair of inputs of each of the 16 outputs:
// one vdpbf16ps operand), int8 four.
#pragma once

#include "halformer/dsl/panels.hpp"
#include "halformer/reference/bfloat16.hpp"

#include <HalideBuffer.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace halformer {

// PyTorch's [out][in] rows `rows` (the logical extents `dims`, their first
// `inputs` dims indexing the input) rounded to bfloat16 (to nearest even) and
// packed in panels: the values' bits, the buffer typed bfloat16 (Halide's
// runtime has no C++ bfloat16 type) so that kernels accept it.
template <class Source>
Halide::Runtime::Buffer<uint16_t> bf16_panels(const Source* rows, const std::vector<int>& dims, int inputs) {
  auto packed = dsl::panels::pack_rows<Halide::Runtime::Buffer<uint16_t>>(
      rows, dims, inputs, [](std::size_t, Source v) { return ref::bf16_bits(float(v)); });
  packed.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
  return packed;
}

} // namespace halformer
