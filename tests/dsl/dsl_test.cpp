// The DSL's static shape algebra (checked by the compiler), and lowering: an
// expression JIT-compiled through Halide gives the values of a direct float64
// evaluation, stages are registered under their names, and inconsistent input
// shapes are rejected at run time by the constraints lowering adds.
#include "halformer/dsl/lower.hpp"
#include "test_seed.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>

using namespace halformer::dsl;
using namespace halformer::dsl::dims;

// ---- compile-time facts: if any is false this file does not compile -------------
static_assert(rank_v<decltype(shape(d_model, t, batch))> == 3);
static_assert(is_permutation_v<decltype(shape(t, d_model)), decltype(shape(d_model, t))>);
static_assert(!is_permutation_v<decltype(shape(t, d_model)), decltype(shape(d_model, batch))>);
static_assert(
    std::is_same_v<decltype(common(shape(d_model, t, batch), shape(d_ff, d_model))), decltype(shape(d_model))>);
static_assert(std::is_same_v<decltype(minus(shape(d_model, t, batch), shape(d_model))), decltype(shape(t, batch))>);
static_assert(index_of_v<decltype(shape(d_k, t, heads, batch)), decltype(heads)> == 2);
// linear's result: the weight's output dims, then the input's non-feature dims
// (the weight in the dot-product order: its input dims first).
static_assert(std::is_same_v<shape_t<decltype(linear("y", input("x", shape(d_model, t, batch)),
                                                     input("w", shape(d_model, d_ff)), input("b", shape(d_ff))))>,
                             decltype(shape(d_ff, t, batch))>);
// A head-layout projection names its result order explicitly.
static_assert(std::is_same_v<
              shape_t<decltype(linear("q", input("x", shape(d_model, t, batch)), input("w", shape(d_model, d_k, heads)),
                                      input("b", shape(d_k, heads)), shape(d_k, t, heads, batch)))>,
              decltype(shape(d_k, t, heads, batch))>);

namespace {

Halide::Buffer<float> random_buffer(std::mt19937& rng, std::vector<int> shape) {
  Halide::Buffer<float> b(shape);
  std::normal_distribution<float> n;
  b.for_each_value([&](float& v) { v = n(rng); });
  return b;
}
} // namespace

TEST_CASE("a lowered expression computes what it says", "[dsl][lowering]") {
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (HALFORMER_TEST_SEED=" << seed << " replays it)");
  std::mt19937 rng(seed);
  const int D = 13, F = 7, T = 5, B = 2;
  Halide::ImageParam x_in(Halide::Float(32), 3, "x"), w_in(Halide::Float(32), 2, "w"), b_in(Halide::Float(32), 1, "b");
  Halide::Param<float> s_in("s");
  auto x = input("x", shape(d_model, t, batch));
  auto w = input("w", shape(d_model, d_ff));
  auto b = input("b", shape(d_ff));
  auto s = param("s");
  // gelu(s * (x . W + b)) transposed to (t, d_ff, batch)
  auto expr = transpose("yt", gelu("act", scale("scaled", linear("y", x, w, b), s)), shape(t, d_ff, batch));

  lowering ctx;
  ctx.bind(x, x_in);
  ctx.bind(w, w_in);
  ctx.bind(b, b_in);
  ctx.bind(s, Halide::Expr(s_in));
  lowered out = ctx.lower(expr);
  REQUIRE(out.dims == std::vector<std::string>{"t", "d_ff", "batch"});
  for (const char* stage : {"y", "scaled", "act", "yt"})
    CHECK(ctx.has_stage(stage));
  CHECK_THROWS_WITH(ctx.stage("nope"), Catch::Contains("unknown stage 'nope'") && Catch::Contains("act"));

  auto xb = random_buffer(rng, {D, T, B}), wb = random_buffer(rng, {D, F}), bb = random_buffer(rng, {F});
  x_in.set(xb), w_in.set(wb), b_in.set(bb), s_in.set(0.5f);
  Halide::Buffer<float> got = out.f.realize({T, F, B});
  for (int bi = 0; bi < B; ++bi)
    for (int o = 0; o < F; ++o)
      for (int ti = 0; ti < T; ++ti) {
        double y = bb(o);
        for (int i = 0; i < D; ++i)
          y += double(xb(i, ti, bi)) * wb(i, o);
        y *= 0.5;
        const double want = 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
        CHECK(std::abs(got(ti, o, bi) - want) <= 1e-5 * (1 + std::abs(want)));
      }
}

TEST_CASE("lowering constrains every input carrying a dimension to one extent", "[dsl][lowering]") {
  Halide::ImageParam a_in(Halide::Float(32), 2, "a"), b_in(Halide::Float(32), 2, "b");
  auto a = input("a", shape(d_model, t));
  auto b = input("b", shape(d_model, t));
  lowering ctx;
  ctx.bind(a, a_in);
  ctx.bind(b, b_in);
  Halide::Func sum = ctx.lower(add("sum", a, b)).f;
  Halide::Buffer<float> ab(4, 3), bb(5, 3);
  ab.fill(1.0f), bb.fill(2.0f);
  a_in.set(ab), b_in.set(bb);
  // b's d_model extent (5) differs from a's (4): a constraint error, not a silent crop.
  std::string message;
  try {
    sum.realize({4, 3});
  } catch (const Halide::Error& e) {
    message = e.what();
  }
  INFO("error: " << message);
  CHECK(message.find("b.extent.0") != std::string::npos);
  CHECK(message.find("a.extent.0") != std::string::npos);
  Halide::Buffer<float> bb_ok(4, 3);
  bb_ok.fill(2.0f);
  b_in.set(bb_ok);
  Halide::Buffer<float> r = sum.realize({4, 3});
  CHECK(r(3, 2) == 3.0f);
}

TEST_CASE("the chunked attention lowering matches a direct softmax, keys by their row table",
          "[dsl][lowering][attention]") {
  const std::uint32_t seed = test_seed();
  INFO("seed " << seed << " (HALFORMER_TEST_SEED=" << seed << " replays it)");
  std::mt19937 rng(seed);
  const int DK = 8, T = 3, TK = 11, H = 2, B = 2, ROWS = 3;
  Halide::ImageParam q_in(Halide::Float(32), 4, "q"), k_in(Halide::Float(32), 4, "k"), v_in(Halide::Float(32), 4, "v"),
      r_in(Halide::Int(32), 2, "kv_rows"), l_in(Halide::Int(32), 1, "lengths");
  Halide::Param<bool> causal_in("causal");
  Halide::Param<int> offset_in("offset");
  auto q = input("q", shape(d_k, t, heads, batch));
  auto k = input("k", shape(d_k, tk, heads, kv_row));
  auto v = input("v", shape(d_k, tk, heads, kv_row));
  auto rows = input("kv_rows", shape(tk, batch), i32);
  auto l = input("lengths", shape(batch), i32);
  lowering ctx;
  ctx.options["kv_chunk"] = 4; // 11 keys: two full chunks and a partial one
  ctx.bind(q, q_in), ctx.bind(k, k_in), ctx.bind(v, v_in), ctx.bind(rows, r_in), ctx.bind(l, l_in);
  auto causal = param("causal", boolean);
  auto offset = param("offset", i32);
  ctx.bind(causal, Halide::Expr(causal_in));
  ctx.bind(offset, Halide::Expr(offset_in));
  auto step = param("decode_step", boolean); // the chunked algorithm, which kv_chunk 4 shapes
  ctx.bind(step, Halide::Expr(false));
  auto own = param("own_rows", boolean); // the table below is not the identity
  ctx.bind(own, Halide::Expr(false));
  Halide::Func out = ctx.lower(attention("attention", q, k, v, rows, l, causal, offset, step, own)).f;
  auto qb = random_buffer(rng, {DK, T, H, B}), kb = random_buffer(rng, {DK, TK, H, ROWS}),
       vb = random_buffer(rng, {DK, TK, H, ROWS});
  Halide::Buffer<int> lb(B), rb(TK, B);
  lb(0) = TK, lb(1) = 6;
  std::uniform_int_distribution<int> any_row(0, ROWS - 1);
  rb.for_each_value([&](int& r) { r = any_row(rng); }); // each key from any row, as a beam's cache
  q_in.set(qb), k_in.set(kb), v_in.set(vb), r_in.set(rb), l_in.set(lb), causal_in.set(true), offset_in.set(7);
  Halide::Buffer<float> got = out.realize({DK, T, H, B});
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < T; ++i) {
        std::vector<double> p(TK, 0.0);
        double m = -1e300, z = 0;
        for (int j = 0; j < TK; ++j)
          if (j < lb(b) && j <= i + 7) {
            double s = 0;
            for (int d = 0; d < DK; ++d)
              s += double(qb(d, i, h, b)) * kb(d, j, h, rb(j, b));
            p[j] = s / std::sqrt(double(DK));
            m = std::max(m, p[j]);
          }
        for (int j = 0; j < TK; ++j)
          p[j] = (j < lb(b) && j <= i + 7) ? std::exp(p[j] - m) : 0.0, z += p[j];
        for (int d = 0; d < DK; ++d) {
          double o = 0;
          for (int j = 0; j < TK; ++j)
            o += p[j] / z * vb(d, j, h, rb(j, b));
          CHECK(std::abs(got(d, i, h, b) - o) <= 1e-5 * (1 + std::abs(o)));
        }
      }
}
