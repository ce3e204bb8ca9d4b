// float16 in the DSL: to_float16's element type is part of the expression type
// (compile_fail/f16_add_float.cpp shows the error), it rounds to nearest even
// and saturates at +-65504 as the float64 reference does, bit for bit, and
// attention widens float16 keys and values to the float32 it computes in.
#include "halformer/dsl/float16.hpp"
#include "halformer/dsl/lower.hpp"
#include "halformer/reference/float16.hpp"
#include "test_seed.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>

using namespace halformer::dsl;
using namespace halformer::dsl::dims;

// ---- compile-time facts ---------------------------------------------------------
static_assert(dtype_v<decltype(to_float16("r", input("x", shape(d_k, t, heads, batch))))> == dtype::f16);
static_assert(dtype_bytes(dtype::f16) == 2);
using half_attention = decltype(attention(
    "a", input("q", shape(d_k, t, heads, batch)), input("k", shape(d_k, tk, heads, kv_row), f16),
    input("v", shape(d_k, tk, heads, kv_row), f16), input("r", shape(tk, batch), i32), input("l", shape(batch), i32),
    param("c", boolean), param("o", i32), param("s", boolean), param("w", boolean)));
static_assert(dtype_v<half_attention> == dtype::f32); // float16 keys and values, float32 result

TEST_CASE("to_float16 rounds to nearest even and saturates, as the reference does", "[dsl][f16]") {
  Halide::ImageParam x_in{Halide::Float(32), 1, "x"};
  lowering ctx;
  auto x = input("x", shape(d_model));
  ctx.bind(x, x_in);
  lowered out = ctx.lower(to_float16("x_f16", x));
  // Ties (1 + 2^-11 down to 1, 1 + 3 2^-11 up), float16's largest value and
  // values past it (saturated, never infinite: 65520 rounds to infinity in IEEE),
  // subnormals and their ties (2^-25 to 0), zeros, and random values of every
  // float32 magnitude.
  std::vector<float> row{1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 65504.0f, 65519.0f, 65520.0f, -1e30f, 3.0e38f,
                         0x1p-24f,        0x1p-25f,        3e-8f,    1e-40f,   0.0f,     -0.0f};
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (HALFORMER_TEST_SEED=" << seed << " replays it)");
  std::mt19937 rng(seed);
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7f7fffffu);
  for (int k = 0; k < 2000; ++k) {
    const std::uint32_t u = bits(rng) | (k % 2 ? 0x80000000u : 0u);
    float v;
    std::memcpy(&v, &u, sizeof v);
    row.push_back(v);
  }
  const int D = int(row.size());
  Halide::Buffer<float> xb(D);
  for (int i = 0; i < D; ++i)
    xb(i) = row[std::size_t(i)];
  x_in.set(xb);
  Halide::Buffer<> realized = out.f.realize({D});
  REQUIRE(realized.type() == Halide::Float(16));
  const auto* got = reinterpret_cast<const std::uint16_t*>(realized.raw_buffer()->host);
  int mismatches = 0;
  for (int i = 0; i < D; ++i) {
    const std::uint16_t want = ref::f16_bits(ref::round_to_f16(row[std::size_t(i)]));
    INFO("x " << row[std::size_t(i)] << ": got " << got[i] << ", want " << want);
    mismatches += got[i] != want;
    if (i < 13)
      CHECK(got[i] == want);
  }
  CHECK(mismatches == 0);
  CHECK(got[0] == 0x3c00); // 1.0
  CHECK(got[1] == 0x3c02); // 1 + 2^-9
  CHECK(got[4] == 0x7bff); // 65504, not infinity
  CHECK(got[8] == 0x0000); // 2^-25: the tie between 0 and 2^-24, to even
}

TEST_CASE("the float16 reference's bits and values invert each other", "[dsl][f16]") {
  int mismatches = 0;
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    if (((b >> 10) & 0x1f) == 0x1f)
      continue; // infinities and NaNs: never written (saturated)
    const double v = ref::f16_value(std::uint16_t(b));
    mismatches += ref::f16_bits(v) != b || ref::round_to_f16(v) != v;
  }
  CHECK(mismatches == 0);
}
