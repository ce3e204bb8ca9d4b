// exp of an argument <= 0, the softmaxes' exp(x - max): fewer vector
// instructions than Halide::exp, which handles the whole float range (its
// floor splits an AVX-512 vector into two vroundps, and it selects the
// overflow and underflow cases).
#pragma once

#include <Halide.h>

namespace halformer::dsl {

// 2^n x e^r with n = x / ln 2 rounded (half down: x / ln 2 - 0.5 truncated
// towards zero, for x <= 0), r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in two
// parts, Cody and Waite), e^r = 1 + r + r^2 P(r) with Cephes' expf polynomial
// P of degree 5: relative error <= 4e-7, 3e-7 measured (tests/dsl/exp_test.cpp,
// against std::exp; 8e-8 in exact float32 steps, but Halide's simplifier
// reassociates r, and strict_float would cost 4% of attention at S = 512:
// Zen 5, one thread, harness medians of 5 interleaved rounds 3.07 -> 3.19 ms).
// x is clamped to -87 first (e^-87 = 1.6e-38; the smallest normal float32 is
// 1.2e-38), so 2^n is a normal float (n >= -126) built from its exponent bits;
// the true value is then below 1.7e-38, an absolute error no sum can see.
// Arguments > 0 are outside its contract (n would round towards zero).
inline Halide::Expr exp_of_nonpositive(const Halide::Expr& x_) {
  using Halide::Expr;
  const Expr x = Halide::max(x_, -87.0f);
  const Expr n = Halide::cast<int>(x * 1.44269504f - 0.5f);
  const Expr nf = Halide::cast<float>(n);
  const Expr r = (x - nf * 0.693359375f) + nf * 2.12194440e-4f;
  Expr p = 1.9875691500e-4f;
  for (const float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = p * r + c;
  const Expr e_r = p * (r * r) + r + 1.0f;
  return e_r * Halide::reinterpret(Halide::Float(32), (n + 127) * (1 << 23));
}

} // namespace halformer::dsl
