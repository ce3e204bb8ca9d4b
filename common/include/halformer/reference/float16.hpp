// IEEE binary16 (float16) as halformer's to_float16 defines it (dsl/float16.hpp),
// in float64 and independently of Halide: round to nearest even, saturating at
// +-65504, subnormals kept.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ref {

// The float16 value nearest x (ties to even), clamped to +-65504 first; NaN stays NaN.
inline double round_to_f16(double x) {
  if (std::isnan(x))
    return x;
  const double a = std::min(std::abs(x), 65504.0);
  int e;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1): 11 significant bits step by 2^(e - 11)
  const double quantum = std::ldexp(1.0, std::max(e, -13) - 11); // below 2^-14: subnormals, 2^-24
  return std::copysign(std::nearbyint(a / quantum) * quantum, x);
}

// The bits of a float16 value (round_to_f16's; not NaN), and the value of bits.
inline std::uint16_t f16_bits(double v) {
  const std::uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::abs(v);
  if (a < std::ldexp(1.0, -14)) // zero or subnormal: a = mantissa 2^-24
    return std::uint16_t(sign | std::uint16_t(std::lround(std::ldexp(a, 24))));
  int e;
  const double m = std::frexp(a, &e); // a = (2m) 2^(e - 1), 2m in [1, 2)
  const auto fraction = std::uint16_t(std::lround((2 * m - 1) * 1024));
  return std::uint16_t(sign | std::uint16_t((e - 1 + 15) << 10) | fraction);
}
inline double f16_value(std::uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
  const double a = exponent == 0 ? std::ldexp(double(fraction), -24)
                                 : std::ldexp(1.0 + fraction / 1024.0, exponent - 15); // no inf/NaN: saturated
  return (bits & 0x8000) ? -a : a;
}

} // namespace ref
