// int8 in the DSL: element types are part of expression types (checked by the
// compiler; the compile_fail cases show the errors), and quantized_linear lowers
// to exactly the quantized arithmetic it states: the int8 values and the int32
// accumulation are compared bit for bit with an independent evaluation (float32
// for the quantization steps, which the DSL defines in float32; exact integers for
// the accumulation), the dequantized result with float64.
#include "halformer/dsl/lower.hpp"
#include "halformer/dsl/quantize.hpp"
#include "test_seed.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

using namespace halformer::dsl;
using namespace halformer::dsl::dims;

// ---- compile-time facts ---------------------------------------------------------
static_assert(dtype_v<decltype(input("w", shape(d_ff, d_model), i8))> == dtype::i8);
static_assert(dtype_v<decltype(input("x", shape(d_model, t)))> == dtype::f32);
// int8 . int8 accumulates in int32; the quantized linear's result is float32 in linear's shape.
static_assert(dtype_v<decltype(contract("c", input("a", shape(d_model, t), i8), input("w", shape(d_ff, d_model), i8),
                                        shape(d_ff, t)))> == dtype::i32);
using qlinear = decltype(quantized_linear(
    "y", input("x", shape(d_model, t, batch)),
    make_int8_weight(input("w", shape(d_model, d_ff), i8), input("s", shape(d_ff)), input("ws", shape(d_ff), i32)),
    input("b", shape(d_ff))));
static_assert(dtype_v<qlinear> == dtype::f32);
static_assert(std::is_same_v<shape_t<qlinear>, decltype(shape(d_ff, t, batch))>);

namespace {
// The quantized linear's stages, JIT-compiled: y = quantized_linear(x, w, b), w
// a plain int8 input or stored in panels (dsl/panels.hpp) with its steps and
// value sums, its products as int16 pairs, unsigned byte quads offset by the
// weight's sums, or signed byte quads (the lowering's three forms; all are plain
// arithmetic, any host runs them).
struct weights {
  bool panels;
  lowering::int8_form form;
};
struct quantized_pipeline {
  weights layout;
  Halide::ImageParam x_in{Halide::Float(32), 3, "x"}, w_in, s_in{Halide::Float(32), 1, "w_step"},
      sums_in{Halide::Int(32), 1, "w_sums"}, b_in{Halide::Float(32), 1, "b"};
  lowering ctx;
  lowered out;
  explicit quantized_pipeline(weights l = {false, lowering::int8_form::pairs})
      : layout(l), w_in(Halide::Int(8), l.panels ? 4 : 2, "w") {
    auto x = input("x", shape(d_model, t, batch));
    auto s = input("w_step", shape(d_ff));
    auto sums = input("w_sums", shape(d_ff), i32);
    auto b = input("b", shape(d_ff));
    ctx.int8_products = l.form;
    ctx.bind(x, x_in), ctx.bind(s, s_in), ctx.bind(sums, sums_in), ctx.bind(b, b_in);
    if (l.panels) {
      auto w = panel_input("w", shape(d_model, d_ff), 1);
      ctx.bind(w, w_in);
      out = ctx.lower(quantized_linear("y", x, make_int8_weight(w, s, sums), b));
    } else {
      auto w = input("w", shape(d_model, d_ff), i8);
      ctx.bind(w, w_in);
      out = ctx.lower(quantized_linear("y", x, make_int8_weight(w, s, sums), b));
    }
  }
  // The weight (d_model, d_ff) and its value sums, as the loader makes them.
  void set_weights(const Halide::Buffer<int8_t>& wb) {
    Halide::Buffer<int32_t> sums(wb.dim(1).extent());
    for (int o = 0; o < wb.dim(1).extent(); ++o) {
      sums(o) = 0;
      for (int i = 0; i < wb.dim(0).extent(); ++i)
        sums(o) += wb(i, o);
    }
    sums_in.set(sums);
    if (layout.panels)
      w_in.set(panels::pack<Halide::Buffer<int8_t>>(wb, 1));
    else
      w_in.set(wb);
  }
};
using form = lowering::int8_form;
constexpr std::array all_layouts{weights{false, form::pairs},         weights{false, form::unsigned_quads},
                                 weights{false, form::signed_quads},  weights{true, form::pairs},
                                 weights{true, form::unsigned_quads}, weights{true, form::signed_quads}};
std::string layout_name(weights l) {
  return std::string(l.panels ? "panels" : "plain int8 weights") + (l.form == form::pairs ? ", pairs"
                                                                    : l.form == form::unsigned_quads
                                                                        ? ", unsigned quads"
                                                                        : ", signed quads");
}

// A row's int8 values as the DSL defines them, in float32 (round half to even).
std::vector<int> quantize_row(const Halide::Buffer<float>& x, int t, int b) {
  float amax = 0;
  for (int i = 0; i < x.dim(0).extent(); ++i)
    amax = std::max(amax, std::abs(x(i, t, b)));
  const float step = amax / 127.0f, inverse = step > 0 ? 1.0f / step : 0.0f;
  std::vector<int> q;
  for (int i = 0; i < x.dim(0).extent(); ++i)
    q.push_back(int(std::clamp(std::nearbyint(x(i, t, b) * inverse), -127.0f, 127.0f)));
  return q;
}
float step_of(const Halide::Buffer<float>& x, int t, int b) {
  float amax = 0;
  for (int i = 0; i < x.dim(0).extent(); ++i)
    amax = std::max(amax, std::abs(x(i, t, b)));
  return amax / 127.0f;
}

// Checks every stage of the pipeline against the independent evaluation.
void check_quantized(quantized_pipeline& p, const Halide::Buffer<float>& xb, const Halide::Buffer<int8_t>& wb,
                     const Halide::Buffer<float>& sb, const Halide::Buffer<float>& bb) {
  REQUIRE(std::fegetround() == FE_TONEAREST);
  const int D = xb.dim(0).extent(), T = xb.dim(1).extent(), B = xb.dim(2).extent(), F = wb.dim(1).extent();
  p.x_in.set(xb), p.s_in.set(sb), p.b_in.set(bb);
  p.set_weights(wb);
  Halide::Buffer<int8_t> q = p.ctx.stage("y_x").realize({D, T, B});
  Halide::Buffer<int32_t> acc = p.ctx.stage("y").realize({F, T, B});
  Halide::Buffer<float> got = p.out.f.realize({F, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::vector<int> want_q = quantize_row(xb, t, b);
      int q_mismatches = 0;
      for (int i = 0; i < D; ++i)
        q_mismatches += q(i, t, b) != want_q[std::size_t(i)];
      CHECK(q_mismatches == 0);
      for (int o = 0; o < F; ++o) {
        std::int64_t sum = 0;
        for (int i = 0; i < D; ++i)
          sum += std::int64_t(want_q[std::size_t(i)]) * wb(i, o);
        CHECK(acc(o, t, b) == sum);
        // float32 dequantization: float(acc) is exact (|acc| < 2^24 here), then two
        // products and the bias, each rounded once: a few ulp of the result.
        const double want = double(sum) * step_of(xb, t, b) * sb(o) + bb(o);
        CHECK(std::abs(got(o, t, b) - want) <= 1e-6 * (std::abs(want) + std::abs(bb(o)) + 1e-30));
      }
    }
}
} // namespace

TEST_CASE("quantized_linear computes the stated int8 arithmetic exactly", "[dsl][int8]") {
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (HALFORMER_TEST_SEED=" << seed << " replays it)");
  std::mt19937 rng(seed);
  for (weights layout : all_layouts)
    for (auto [D, F, T, B] : {std::array{333, 7, 5, 3}, std::array{1, 1, 1, 1}, std::array{64, 33, 1, 8}}) {
      INFO(layout_name(layout) << ", d_model " << D << ", d_ff " << F << ", t " << T << ", batch " << B);
      quantized_pipeline p(layout);
      Halide::Buffer<float> xb(D, T, B), sb(F), bb(F);
      Halide::Buffer<int8_t> wb(D, F);
      std::normal_distribution<float> n;
      std::uniform_int_distribution<int> w8(-127, 127);
      xb.for_each_value([&](float& v) { v = n(rng); });
      wb.for_each_value([&](int8_t& v) { v = int8_t(w8(rng)); });
      sb.for_each_value([&](float& v) { v = std::abs(n(rng)) / 127.0f; });
      bb.for_each_value([&](float& v) { v = n(rng); });
      for (int i = 0; i < D; ++i)
        xb(i, 0, B - 1) = 0.0f; // a zero row: step 0, all-zero values, the bias alone
      check_quantized(p, xb, wb, sb, bb);
    }
}

TEST_CASE("quantization rounds half to even and never yields -128", "[dsl][int8]") {
  quantized_pipeline p;
  // max |x| = 127: step 1, so x * (1 / step) is x and the halves are exact.
  const std::vector<float> row{127.0f, -127.0f, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 126.5f};
  const std::vector<int> want{127, -127, 2, 4, -2, -4, 0, 0, 126};
  const int D = int(row.size());
  Halide::Buffer<float> xb(D, 1, 1), sb(1), bb(1);
  Halide::Buffer<int8_t> wb(D, 1);
  for (int i = 0; i < D; ++i)
    xb(i, 0, 0) = row[std::size_t(i)], wb(i, 0) = 1;
  sb(0) = 1.0f, bb(0) = 0.0f;
  p.x_in.set(xb), p.s_in.set(sb), p.b_in.set(bb);
  p.set_weights(wb);
  Halide::Buffer<int8_t> q = p.ctx.stage("y_x").realize({D, 1, 1});
  for (int i = 0; i < D; ++i)
    CHECK(int(q(i, 0, 0)) == want[std::size_t(i)]);
  check_quantized(p, xb, wb, sb, bb);
}

// Products of two int8 values of magnitude <= 127 sum pairwise to <= 32258 < 2^15,
// so no int16 step of the pairs (pmaddwd) can saturate; the quads' offset inputs
// (x + 128 in [1, 255]) give products within 255 x 127 = 32385, which vpdpbusd
// adds to int32 without an int16 step; int32 holds the sum of 66000 of them.
// The extremes: every product +-127^2 (quads: 255 x +-127 and 1 x +-127), all of
// one sign.
TEST_CASE("int8 accumulation at the extremes neither saturates nor overflows", "[dsl][int8]") {
  for (weights layout : all_layouts) {
    INFO(layout_name(layout));
    quantized_pipeline p(layout);
    const int D = 4099, F = 17, T = 3, B = 1; // odd lengths: no whole number of vectors or pairs
    Halide::Buffer<float> xb(D, T, B), sb(F), bb(F);
    Halide::Buffer<int8_t> wb(D, F);
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < D; ++i)
        xb(i, t, 0) = t == 1 ? -3.0f : 3.0f; // quantizes to +-127 throughout
    for (int o = 0; o < F; ++o)
      for (int i = 0; i < D; ++i)
        wb(i, o) = int8_t(o % 2 ? -127 : 127);
    sb.fill(1.0f / 127), bb.fill(0.0f);
    check_quantized(p, xb, wb, sb, bb);
    Halide::Buffer<int32_t> acc = p.ctx.stage("y").realize({F, T, B});
    CHECK(acc(0, 0, 0) == D * 127 * 127);
    CHECK(acc(1, 0, 0) == -D * 127 * 127);
  }
}
