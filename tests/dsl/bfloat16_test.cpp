// bfloat16 in the DSL: element types are part of expression types (the
// compile_fail cases show the errors), to_bfloat16 rounds to nearest even as the
// reference (and vcvtneps2bf16) does, bit for bit, and bf16_linear lowers to the
// stated arithmetic: bfloat16 inputs and weights, exact products, float32 sums.
#include "halformer/dsl/bfloat16.hpp"
#include "halformer/dsl/lower.hpp"
#include "halformer/reference/bfloat16.hpp"
#include "halformer/reference/convert.hpp"
#include "test_seed.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace halformer::dsl;
using namespace halformer::dsl::dims;

// ---- compile-time facts ---------------------------------------------------------
static_assert(dtype_v<decltype(to_bfloat16("r", input("x", shape(d_model, t))))> == dtype::bf16);
// bfloat16 . bfloat16 sums in float32; bf16_linear's result is float32 in the int8 layout's shape.
static_assert(dtype_v<decltype(contract("c", input("a", shape(d_model, t), bf16),
                                        input("w", shape(d_model, d_ff), bf16), shape(d_ff, t)))> == dtype::f32);
using blinear = decltype(bf16_linear("y", input("x", shape(d_model, t, batch)), input("w", shape(d_model, d_ff), bf16),
                                     input("b", shape(d_ff))));
static_assert(dtype_v<blinear> == dtype::f32);
static_assert(std::is_same_v<shape_t<blinear>, decltype(shape(d_ff, t, batch))>);

namespace {
// y = bf16_linear(x, w, b), JIT-compiled on the host.
struct bf16_pipeline {
  Halide::ImageParam x_in{Halide::Float(32), 3, "x"}, w_in{Halide::BFloat(16), 2, "w"}, b_in{Halide::Float(32), 1, "b"};
  lowering ctx;
  lowered out;
  bf16_pipeline() {
    auto x = input("x", shape(d_model, t, batch));
    auto w = input("w", shape(d_model, d_ff), bf16);
    auto b = input("b", shape(d_ff));
    ctx.bind(x, x_in), ctx.bind(w, w_in), ctx.bind(b, b_in);
    out = ctx.lower(bf16_linear("y", x, w, b));
  }
};

Halide::Buffer<> bf16_buffer(int d, int f) { return Halide::Buffer<>(Halide::BFloat(16), {d, f}); }
} // namespace

TEST_CASE("to_bfloat16 rounds to nearest even, as the reference does", "[dsl][bf16]") {
  bf16_pipeline p;
  // 1 + 2^-8 is a tie (rounds down to 1), 1 + 3 x 2^-8 a tie rounding up, and
  // random values of every magnitude.
  std::vector<float> row{1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -1.0f - 0x1p-8f, 0.0f, -0.0f, 3.0e38f, 1e-40f};
  std::mt19937 rng(test_seed());
  std::uniform_int_distribution<std::uint32_t> bits(0, 0x7f7fffffu);
  for (int k = 0; k < 1000; ++k) {
    std::uint32_t u = bits(rng) | (k % 2 ? 0x80000000u : 0u);
    float v;
    std::memcpy(&v, &u, sizeof v);
    row.push_back(v);
  }
  const int D = int(row.size());
  Halide::Buffer<float> xb(D, 1, 1);
  for (int i = 0; i < D; ++i)
    xb(i, 0, 0) = row[std::size_t(i)];
  p.x_in.set(xb);
  Halide::Buffer<> realized = p.ctx.stage("y_x").realize({D, 1, 1});
  REQUIRE(realized.type() == Halide::BFloat(16));
  const auto* got = reinterpret_cast<const std::uint16_t*>(realized.raw_buffer()->host); // dense: i fastest
  int mismatches = 0;
  for (int i = 0; i < D; ++i)
    mismatches += got[i] != ref::bf16_bits(row[std::size_t(i)]);
  CHECK(mismatches == 0);
  CHECK(got[0] == 0x3f80); // the tie to even: 1.0
  CHECK(got[1] == 0x3f82);
}

TEST_CASE("bf16_linear sums exact bfloat16 products in float32", "[dsl][bf16]") {
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (HALFORMER_TEST_SEED=" << seed << " replays it)");
  std::mt19937 rng(seed);
  bf16_pipeline p;
  for (auto [D, F, T, B] : {std::array{333, 7, 5, 3}, std::array{1, 1, 1, 1}, std::array{64, 33, 1, 8}}) {
    INFO("d_model " << D << ", d_ff " << F << ", t " << T << ", batch " << B);
    Halide::Buffer<float> xb(D, T, B), bb(F);
    Halide::Buffer<> wb = bf16_buffer(D, F);
    auto* wbits = reinterpret_cast<std::uint16_t*>(wb.raw_buffer()->host); // dense: inputs fastest
    std::normal_distribution<float> n;
    xb.for_each_value([&](float& v) { v = n(rng); });
    bb.for_each_value([&](float& v) { v = n(rng); });
    ref::tensor w({F, D});
    for (int o = 0; o < F; ++o)
      for (int i = 0; i < D; ++i) {
        const std::uint16_t bits = ref::bf16_bits(n(rng) / std::sqrt(float(D)));
        wbits[std::size_t(o) * D + i] = bits, w(o, i) = ref::bf16_value(bits);
      }
    p.x_in.set(xb), p.w_in.set(wb), p.b_in.set(bb);
    Halide::Buffer<float> got = p.out.f.realize({F, T, B});
    const auto want = ref::bf16_linear(ref::to_ref(*xb.get()), w, ref::to_ref(*bb.get()));
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        for (int o = 0; o < F; ++o) {
          // A float32 sum of D exact products: within D x 2^-24 of the sum of |products|.
          double scale = std::abs(bb(o));
          for (int i = 0; i < D; ++i)
            scale += std::abs(ref::round_to_bf16(xb(i, t, b)) * w(i, o));
          CHECK(std::abs(got(o, t, b) - want(o, t, b)) <= (D + 1) * 0x1p-24 * scale);
        }
  }
}
