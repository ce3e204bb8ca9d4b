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

// A GEMM weight in the dot-product layout (its first `inputs` dims index the
// input, the others the output, each flattened dim 0 fastest: a head
// projection's (d_model, d_k, heads) gives outputs h * d_k + j) as the
// reference's (out, in) matrix, each stored value mapped by `value` (int8
// values as they are, bfloat16 bits to their value).
template <class T, int D, int S, class Value>
tensor dot_weight_to_ref(const Halide::Runtime::Buffer<T, D, S>& w, int inputs, Value value) {
  int in = 1, out = 1;
  for (int d = 0; d < w.dimensions(); ++d)
    (d < inputs ? in : out) *= w.dim(d).extent();
  tensor t({out, in});
  std::size_t k = 0; // visited dim 0 fastest: input k % in, output k / in
  w.for_each_element([&](const int* pos) {
    t(int(k / std::size_t(in)), int(k % std::size_t(in))) = value(w(pos));
    ++k;
  });
  return t;
}
template <class T, int D, int S> tensor dot_weight_to_ref(const Halide::Runtime::Buffer<T, D, S>& w, int inputs) {
  return dot_weight_to_ref(w, inputs, [](T v) { return double(v); });
}

// Head biases (d_k, heads) as the reference's outputs h * d_k + j.
inline tensor head_bias_to_ref(const Halide::Runtime::Buffer<const float>& b) {
  const int dk = b.dim(0).extent(), H = b.dim(1).extent();
  tensor t({dk * H});
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < dk; ++j)
      t(h * dk + j) = b(j, h);
  return t;
}

} // namespace ref
