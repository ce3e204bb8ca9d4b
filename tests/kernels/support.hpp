// Test support: fresh random inputs (seed printed; HALFORMER_TEST_SEED replays a
// run), conversion of kernel buffers to the float64 reference, and the comparison.
//
// Tolerance. A float32 kernel differs from the float64 reference by rounding: each
// output is a reduction of length K (K <= 2048 here), whose float32 error grows
// like sqrt(K) * 2^-24 relative to the magnitude of its terms (typically < 3e-6 at
// K = 2048, worst observed well under 1e-5). We therefore accept
//     |got - ref| <= rtol * (|ref| + rms(ref))     with rtol = 1e-5,
// i.e. 1e-5 relative to the element or to the output's typical magnitude,
// whichever is larger (an element that cancels to ~0 cannot have a smaller error
// than its terms' rounding). An output of one or a few elements has no typical
// magnitude of its own (its rms is the element, however much it cancelled):
// CHECK_CLOSE_AT(got, want, tol, typical) gives the magnitude its inputs'
// distributions give it. A wrong index, mask or missing term produces errors of
// order 1e-2..1 and fails by orders of magnitude.
#pragma once

#include "halformer/dsl/panels.hpp"
#include "halformer/reference/convert.hpp"
#include "hf_all.h"
#include "kernel_api.hpp"

#include <HalideBuffer.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

namespace test {

using Halide::Runtime::Buffer;
using ref::dot_weight_to_ref;
using ref::head_bias_to_ref;
using ref::to_ref;
inline constexpr double rtol = 1e-5;

std::mt19937& rng();

inline Buffer<float> random(std::vector<int> shape, float scale = 1.0f) {
  Buffer<float> b(shape);
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](float& v) { v = n(rng()); });
  return b;
}

// A float32 GEMM weight of logical extents `dims` (the dot-product order, its
// first `inputs` dims the input's) stored in panels, as the kernels take it.
inline Buffer<float> panels(const Buffer<float>& logical, int inputs) {
  return halformer::dsl::panels::pack<Buffer<float>>(logical, inputs);
}

struct comparison {
  double worst = 0;  // max |got - ref| / (|ref| + rms)
  std::string where; // position of the worst element
  bool finite = true;
};

// typical: the outputs' magnitude by construction, used where it exceeds their rms.
inline comparison compare(const Buffer<const float>& got, const ref::tensor& want, double typical = 0) {
  comparison c;
  double ss = 0;
  for (double v : want.data)
    ss += v * v;
  const double rms = std::max(typical, want.data.empty() ? 0 : std::sqrt(ss / double(want.data.size())));
  std::size_t i = 0;
  got.for_each_element([&](const int* pos) {
    const double g = got(pos), w = want.data[i++];
    if (!std::isfinite(g))
      c.finite = false;
    const double denom = std::abs(w) + rms + 1e-30;
    const double e = std::abs(g - w) / denom;
    if (e > c.worst || !std::isfinite(e)) {
      c.worst = std::isfinite(e) ? e : INFINITY;
      std::ostringstream s;
      s << "at (";
      for (int d = 0; d < got.dimensions(); ++d)
        s << (d ? "," : "") << pos[d];
      s << ") got " << g << " want " << w;
      c.where = s.str();
    }
  });
  return c;
}

#define CHECK_CLOSE(got, want, tol) CHECK_CLOSE_AT(got, want, tol, 0.0)
#define CHECK_CLOSE_AT(got, want, tol, typical)                                                                        \
  do {                                                                                                                 \
    REQUIRE((got).number_of_elements() == (want).data.size());                                                         \
    const auto cmp_ = ::test::compare((got), (want), (typical));                                                       \
    INFO("worst relative error " << cmp_.worst << " " << cmp_.where << " (tolerance " << (tol) << ")");                \
    CHECK(cmp_.finite);                                                                                                \
    CHECK(cmp_.worst <= (tol));                                                                                        \
  } while (0)

// A kernel call must succeed; on failure show the kernel's message.
#define REQUIRE_OK(call)                                                                                               \
  do {                                                                                                                 \
    ::test::clear_error();                                                                                             \
    const int rc_ = (call);                                                                                            \
    INFO(#call << " returned " << rc_ << ": " << ::test::last_error());                                                \
    REQUIRE(rc_ == 0);                                                                                                 \
  } while (0)

// A kernel call must fail with a message containing `text`.
#define REQUIRE_KERNEL_ERROR(call, text)                                                                               \
  do {                                                                                                                 \
    ::test::clear_error();                                                                                             \
    const int rc_ = (call);                                                                                            \
    const std::string msg_ = ::test::last_error();                                                                     \
    INFO(#call << " returned " << rc_ << ": " << msg_);                                                                \
    REQUIRE(rc_ != 0);                                                                                                 \
    CHECK(msg_.find(text) != std::string::npos);                                                                       \
  } while (0)

// A row's log-probability against the reference's: a log-sum-exp of N terms in
// float32 errs by about sqrt(N) ulp of the sum.
inline double log_prob_error(double got, double want) { return std::abs(got - want) / (std::abs(want) + 1.0); }

// The largest of `error(t, b)` over the rows of (T, B), each row named in a failure.
template <class Error> double worst_over_rows(int T, int B, Error error) {
  double worst = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      INFO("row t " << t << " b " << b);
      worst = std::max(worst, error(t, b));
    }
  return worst;
}

// `check` on random logits (of scale 3) of each shape.
struct logits_shape {
  int vocab, t, batch;
};
template <class Check> void for_random_logits(std::initializer_list<logits_shape> shapes, Check check) {
  for (const auto& s : shapes) {
    INFO("vocab " << s.vocab << " t " << s.t << " batch " << s.batch);
    check(random({s.vocab, s.t, s.batch}, 3.0f));
  }
}

} // namespace test
