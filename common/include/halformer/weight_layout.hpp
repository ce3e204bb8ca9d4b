// How a weight in rows lies in memory (the bfloat16 GEMM weights and the int8
// embedding tables; float32 and int8 GEMM weights lie in panels, dsl/panels.hpp),
// one definition for the runtime (which loads models so) and the measuring
// problems (so that tuning, `compare` and the kernel benchmarks time the layout
// models run with).
//
// A weight's rows (one output's inputs each, in the dot-product layout) lie one
// row stride apart. When that stride is a multiple of 1 KiB (d_model 512, d_ff
// 2048), the rows a register tile reads in turn share a few L1 sets (the set
// repeats every 4 KiB), and a chunk of them evicts itself: a Transformer-base
// ffn at 128 rows took 6.2 ms, and 4.8 ms at d_model 528, d_ff 2064 (Zen 3, 2
// threads, when float32 weights lay in rows). Such rows get at least one cache
// line of padding, which spreads them over every set; kernels take any row stride.
#pragma once

#include <HalideBuffer.h>

#include <vector>

namespace halformer {

// A weight of extents `dims` (innermost first) whose rows are its first `row_dims`
// dims, padded as above by growing the last of them. Any element type gets the
// same 64 bytes.
template <class T = float> Halide::Runtime::Buffer<T> gemm_weight(const std::vector<int>& dims, int row_dims) {
  constexpr int line = 64 / int(sizeof(T)); // elements per cache line
  int inner = 1;                            // elements per step of the row's last dim
  for (int i = 0; i + 1 < row_dims; ++i)
    inner *= dims[std::size_t(i)];
  const std::size_t last = std::size_t(row_dims - 1);
  std::vector<int> allocated = dims;
  if (inner * dims[last] * int(sizeof(T)) % 1024 == 0)
    allocated[last] += (line + inner - 1) / inner;
  return Halide::Runtime::Buffer<T>(allocated).cropped(int(last), 0, dims[last]);
}

// A bfloat16 weight laid out as gemm_weight's: its values' bits, the buffer typed
// bfloat16 (Halide's runtime has no C++ bfloat16 type) so that kernels accept it.
inline Halide::Runtime::Buffer<uint16_t> bf16_gemm_weight(const std::vector<int>& dims, int row_dims) {
  Halide::Runtime::Buffer<uint16_t> b = gemm_weight<uint16_t>(dims, row_dims);
  b.raw_buffer()->type = halide_type_t(halide_type_bfloat, 16);
  return b;
}

} // namespace halformer
