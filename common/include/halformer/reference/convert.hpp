// Kernel buffers (Halide::Runtime::Buffer) as float64 reference tensors.
#pragma once

#include "reference.hpp"

#include <HalideBuffer.h>

namespace ref {

// Any element type a kernel buffer holds (float32, int8 weights).
template <class T, int D, int S> tensor to_ref(const Halide::Runtime::Buffer<T, D, S>& b) {
  std::vector<int> dims;
  for (int i = 0; i < b.dimensions(); ++i)
    dims.push_back(b.dim(i).extent());
  tensor t(dims);
  std::size_t i = 0;
  // Buffer::for_each_element visits dim 0 fastest, matching tensor's order.
  b.for_each_element([&](const int* pos) { t.data[i++] = double(b(pos)); });
  return t;
}

// Kernel weights (d_k, heads, d_model) as the reference's (out = h * d_k + j, in).
inline tensor head_weight_to_ref(const Halide::Runtime::Buffer<const float>& w) {
  const int dk = w.dim(0).extent(), H = w.dim(1).extent(), dm = w.dim(2).extent();
  tensor t({dk * H, dm});
  for (int i = 0; i < dm; ++i)
    for (int h = 0; h < H; ++h)
      for (int j = 0; j < dk; ++j)
        t(h * dk + j, i) = w(j, h, i);
  return t;
}
inline tensor head_bias_to_ref(const Halide::Runtime::Buffer<const float>& b) {
  const int dk = b.dim(0).extent(), H = b.dim(1).extent();
  tensor t({dk * H});
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < dk; ++j)
      t(h * dk + j) = b(j, h);
  return t;
}

} // namespace ref
