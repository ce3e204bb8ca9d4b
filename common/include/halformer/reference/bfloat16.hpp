// The bfloat16 GEMMs as halformer defines them (dsl/bfloat16.hpp), in float64:
// inputs rounded to bfloat16 (to nearest even, as vcvtneps2bf16 and Halide's
// cast), products and sums exact here (a kernel sums in float32).
#pragma once

#include "halformer/reference/reference.hpp"

#include <cstdint>
#include <cstring>

namespace ref {

// The bfloat16 bits of a float32, rounded to nearest even (NaN stays NaN).
inline std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return std::uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}
inline float bf16_value(std::uint16_t bits) {
  const std::uint32_t u = std::uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline double round_to_bf16(double x) { return bf16_value(bf16_bits(float(x))); }

// y(o, t, b) = sum_i bf16(x(i, t, b)) w(o, i) + bias(o), w holding bfloat16 values
// (out, in): linear() of the rounded input.
inline tensor bf16_linear(const tensor& x, const tensor& w, const tensor& bias) {
  tensor rounded = x;
  for (double& v : rounded.data)
    v = round_to_bf16(v);
  return linear(rounded, w, bias);
}

// residual + W2 bf16(act(W1 bf16(x) + b1)) + b2, w1 (d_ff, d_model) and w2
// (d_model, d_ff) bfloat16 values (out, in). The hidden layer is float64 here and
// float32 in a kernel, so a hidden value within ambiguity x (|value| + 1) of a
// bfloat16 rounding boundary (hidden values are O(1); float32 sums of their
// products err by ~1e-6) may round either way: `slack` is, per output, what such
// roundings can change (the bfloat16 values either side, times the weight).
struct bf16_ffn_result {
  tensor y, slack;
};
inline bf16_ffn_result bf16_ffn(const tensor& x, const tensor& residual, const tensor& w1, const tensor& b1,
                                const tensor& w2, const tensor& b2, activation act, double ambiguity = 1e-5) {
  const int D = x.dims[0], T = x.dims[1], B = x.dims[2], F = w1.dims[0];
  tensor h = bf16_linear(x, w1, b1);
  for (double& v : h.data)
    v = activate(act, v);
  bf16_ffn_result r{add(residual, bf16_linear(h, w2, b2)), tensor({D, T, B})};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int j = 0; j < F; ++j) {
        const double v = h(j, t, b), window = ambiguity * (std::abs(v) + 1);
        const double lo = round_to_bf16(v - window), hi = round_to_bf16(v + window);
        if (lo == hi)
          continue;
        for (int o = 0; o < D; ++o)
          r.slack(o, t, b) += std::abs(w2(o, j)) * std::abs(hi - lo);
      }
  return r;
}

} // namespace ref
