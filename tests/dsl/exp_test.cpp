// exp_of_nonpositive (dsl/exp.hpp), the softmaxes' exp(x - max), against
// std::exp in double: relative error <= 4e-7 for x >= -87 (3e-7 measured:
// the polynomial, float32's roundings and the reassociated r, about 5 ulp);
// absolute error <= 1.7e-38 below (it clamps x to -87: e^-87 = 1.65e-38);
// exactly 1 at 0. Vectorised by 16, as the kernels use it.
#include "halformer/dsl/exp.hpp"
#include "test_seed.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

TEST_CASE("exp_of_nonpositive is e^x for x <= 0 within its stated error", "[dsl][exp]") {
  std::vector<float> xs{0.0f,   -0.0f,  -1e-30f, -0.34657359f, -0.34657360f, -0.5f,   -1.0f,
                        -10.0f, -86.9f, -87.0f,  -87.5f,       -103.0f,      -200.0f, -1e30f};
  std::mt19937 rng(test_seed());
  std::uniform_real_distribution<float> wide(-100.0f, 0.0f), near(-2.0f, 0.0f);
  for (int i = 0; i < 200000; ++i)
    xs.push_back(i % 2 ? wide(rng) : near(rng));
  Halide::Buffer<float> in(static_cast<int>(xs.size()));
  for (int i = 0; i < in.width(); ++i)
    in(i) = xs[i];
  Halide::Var i("i");
  Halide::Func f("exp_of_nonpositive");
  f(i) = halformer::dsl::exp_of_nonpositive(in(i));
  f.vectorize(i, 16, Halide::TailStrategy::GuardWithIf);
  const Halide::Buffer<float> got = f.realize({in.width()});
  CHECK(got(0) == 1.0f);
  double worst = 0;
  for (int k = 0; k < in.width(); ++k) {
    const double want = std::exp(static_cast<double>(xs[k]));
    INFO("x = " << xs[k] << ", e^x = " << want << ", got " << got(k) << ", relative error " << (got(k) - want) / want);
    REQUIRE(std::isfinite(got(k)));
    if (xs[k] >= -87.0f) {
      worst = std::max(worst, std::abs(got(k) - want) / want);
      REQUIRE(std::abs(got(k) - want) <= 4e-7 * want);
    } else
      REQUIRE(std::abs(got(k) - want) <= 1.7e-38);
  }
  WARN("largest relative error " << worst);
}
