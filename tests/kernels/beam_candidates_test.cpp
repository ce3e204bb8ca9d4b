// beam_candidates against the reference: every chunk's maximum (exactly, a short
// last chunk included) and the row's best log-probability, over vocabularies of
// 1, 63, 64, 65 and 32000, logits near +-1e4 and with ties.
#include "support.hpp"

#include "halformer/dsl/kernels.hpp"

using test::Buffer;

namespace {
constexpr int chunk = halformer::dsl::kernels::beam_candidates::chunk;

void check_candidates(Buffer<float> x) {
  const int V = x.dim(0).extent(), T = x.dim(1).extent(), B = x.dim(2).extent(), C = (V + chunk - 1) / chunk;
  Buffer<float> chunk_max(C, T, B), top(T, B);
  REQUIRE_OK(HF(beam_candidates)(x, chunk_max, top));
  const auto want_max = ref::chunk_maxima(test::to_ref(x), chunk);
  const auto want_top = ref::greedy_pick(test::to_ref(x));
  const double worst = test::worst_over_rows(T, B, [&](int t, int b) {
    for (int c = 0; c < C; ++c)
      CHECK(chunk_max(c, t, b) == want_max(c, t, b)); // float values: their maximum is exact
    return test::log_prob_error(top(t, b), want_top.log_p[std::size_t(b) * T + t]);
  });
  CHECK(worst <= test::rtol);
}
} // namespace

TEST_CASE("beam_candidates gives every chunk's maximum and the best log-probability", "[beam_candidates]") {
  test::for_random_logits({{1, 1, 1}, {63, 1, 3}, {64, 2, 2}, {65, 1, 5}, {32000, 1, 8}}, check_candidates);
}

TEST_CASE("beam_candidates keeps ties and large offsets exact", "[beam_candidates]") {
  Buffer<float> x(333, 1, 3);
  x.for_each_element([&](int v, int t, int b) { x(v, t, b) = float((v * 7 + b) % 11) - (b == 2 ? 1e4f : 0.0f); });
  x(332, 0, 0) = 50.0f; // the short last chunk's own maximum
  x(0, 0, 1) = 50.0f;   // the first entry
  check_candidates(x);
  const auto rejected = HF(beam_candidates)(x, Buffer<float>(5, 1, 3), Buffer<float>(1, 3));
  CHECK(rejected != 0); // 333 entries make 6 chunks: an output of 5 is an error, not a partial answer
}
