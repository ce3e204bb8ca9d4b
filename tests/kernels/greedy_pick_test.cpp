// greedy_pick against the reference: the best id of every row (exactly; ties go
// to the lowest id) and its log-probability, over vocabularies of 1, 7, 333 and
// 32000, decode (t = 1) and teacher-forced (t > 1) shapes, logits near +-1e4;
// rows of -inf or with NaNs still give an id of the vocabulary.
#include "support.hpp"

#include <limits>

using test::Buffer;

namespace {
void check_pick(Buffer<float> x) {
  const int T = x.dim(1).extent(), B = x.dim(2).extent();
  Buffer<int32_t> ids(T, B);
  Buffer<float> lp(T, B);
  REQUIRE_OK(HF(greedy_pick)(x, ids, lp));
  const auto want = ref::greedy_pick(test::to_ref(x));
  const double worst = test::worst_over_rows(T, B, [&](int t, int b) {
    const std::size_t i = std::size_t(b) * T + t;
    CHECK(ids(t, b) == want.ids[i]);
    return test::log_prob_error(lp(t, b), want.log_p[i]);
  });
  CHECK(worst <= test::rtol);
}
} // namespace

TEST_CASE("greedy_pick breaks ties toward the lowest id, also near +-1e4", "[greedy_pick]") {
  Buffer<float> x(300, 2, 3);
  x.for_each_element([&](int v, int t, int b) { x(v, t, b) = float((v * 7 + t + b) % 11) - (b == 2 ? 1e4f : 0.0f); });
  // Every row's maximum (10) occurs several times; plant a few more at chosen places.
  x(299, 0, 0) = 10.0f;
  x(0, 1, 1) = 10.0f;
  check_pick(x);
}

TEST_CASE("greedy_pick gives a valid id for rows of -inf or with a NaN", "[greedy_pick]") {
  const float inf = std::numeric_limits<float>::infinity();
  Buffer<float> x(333, 1, 3);
  x.fill(-inf);                                                     // row 0: every entry -inf: the first is the best
  x(5, 0, 1) = 2.0f;                                                // row 1: a NaN beside a finite maximum
  x(7, 0, 1) = std::numeric_limits<float>::quiet_NaN();             //
  x.cropped(2, 2, 1).fill(std::numeric_limits<float>::quiet_NaN()); // row 2: only NaNs
  Buffer<int32_t> ids(1, 3);
  Buffer<float> lp(1, 3);
  REQUIRE_OK(HF(greedy_pick)(x, ids, lp));
  CHECK(ids(0, 0) == 0);
  for (int b = 0; b < 3; ++b) {
    INFO("row " << b);
    CHECK(ids(0, b) >= 0);
    CHECK(ids(0, b) < 333);
  }
}

TEST_CASE("greedy_pick finds the reference's best token and log-probability", "[greedy_pick]") {
  test::for_random_logits({{1, 1, 1}, {7, 1, 3}, {333, 5, 2}, {32000, 1, 8}, {1000, 7, 1}}, check_pick);
}
