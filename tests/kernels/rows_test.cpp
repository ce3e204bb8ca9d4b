// LayerNorm (plain and fused with the residual add) and masked softmax / log-softmax.
#include "support.hpp"

using test::Buffer;

namespace {
struct row_shape {
  int n, t, batch;
};
const row_shape row_shapes[] = {{1, 1, 1}, {7, 7, 2}, {64, 64, 3}, {333, 7, 1}, {512, 33, 2}, {17, 1, 3}};
} // namespace

TEST_CASE("layernorm matches the reference", "[layernorm]") {
  for (const auto& s : row_shapes) {
    INFO("d_model " << s.n << " t " << s.t << " batch " << s.batch);
    // A large common offset: a one-pass variance would cancel catastrophically
    // (errors ~1e-3). Even exact sums leave x - mean with the rounding of mean
    // itself, offset * 2^-24 absolute (6e-6 for 100) per unit std, so the
    // tolerance adds offset * 2^-23 to the usual 1e-5.
    const float offset = 100.0f;
    auto x = test::random({s.n, s.t, s.batch});
    x.for_each_value([&](float& v) { v += offset; });
    auto gamma = test::random({s.n}), beta = test::random({s.n});
    const float eps = 1e-5f;
    Buffer<float> out(s.n, s.t, s.batch);
    REQUIRE_OK(HF(layernorm)(x, gamma, beta, eps, out));
    CHECK_CLOSE(out, ref::layernorm(test::to_ref(x), test::to_ref(gamma), test::to_ref(beta), eps),
                test::rtol + offset * std::ldexp(1.0, -23));
  }
}

TEST_CASE("add_layernorm normalises x + residual", "[layernorm]") {
  for (const auto& s : row_shapes) {
    INFO("d_model " << s.n << " t " << s.t << " batch " << s.batch);
    auto x = test::random({s.n, s.t, s.batch}), r = test::random({s.n, s.t, s.batch});
    auto gamma = test::random({s.n}), beta = test::random({s.n});
    Buffer<float> out(s.n, s.t, s.batch);
    REQUIRE_OK(HF(add_layernorm)(x, r, gamma, beta, 1e-6f, out));
    CHECK_CLOSE(
        out, ref::layernorm(ref::add(test::to_ref(x), test::to_ref(r)), test::to_ref(gamma), test::to_ref(beta), 1e-6),
        test::rtol);
  }
}

TEST_CASE("layernorm eps is honoured on constant rows", "[layernorm]") {
  // A constant row has variance 0: the output is beta exactly and finite.
  Buffer<float> x(9, 2, 1), gamma(9), beta(9), out(9, 2, 1);
  x.fill(3.0f), gamma.fill(2.0f);
  beta.for_each_element([&](int i) { beta(i) = float(i); });
  REQUIRE_OK(HF(layernorm)(x, gamma, beta, 1e-5f, out));
  out.for_each_element([&](int i, int t, int b) { CHECK(out(i, t, b) == beta(i)); });
}

TEST_CASE("masked softmax and log-softmax match the reference", "[softmax]") {
  for (bool log : {false, true})
    for (bool causal : {false, true})
      for (const auto& s : row_shapes) {
        const int offset = causal ? int(test::rng()() % 5) - 2 : 0;
        INFO("n " << s.n << " t " << s.t << " batch " << s.batch << " log " << log << " causal " << causal << " offset "
                  << offset);
        auto x = test::random({s.n, s.t, s.batch}, 3.0f);
        Buffer<int32_t> len(s.batch);
        std::vector<int> lengths(s.batch);
        for (int b = 0; b < s.batch; ++b)
          len(b) = lengths[b] = b == 0 ? s.n : b == 1 ? 1 : 0; // full, 1, none
        Buffer<float> out(s.n, s.t, s.batch);
        REQUIRE_OK(log ? HF(log_softmax)(x, len, causal, offset, out) : HF(softmax)(x, len, causal, offset, out));
        CHECK_CLOSE(out, ref::softmax(test::to_ref(x), lengths, causal, offset, log), test::rtol);
      }
}

TEST_CASE("softmax of logits near +-1e4 has no NaN or inf", "[softmax][numerics]") {
  const int n = 300, t = 3;
  Buffer<float> x(n, t, 1), out(n, t, 1);
  // Exactly representable values near +-1e4, half a unit apart.
  x.for_each_element([&](int i, int r, int) { x(i, r, 0) = (i % 2 ? 1e4f : -1e4f) + 0.5f * float((i * 7 + r) % 13); });
  Buffer<int32_t> len(1);
  len(0) = n;
  for (bool log : {false, true}) {
    REQUIRE_OK(log ? HF(log_softmax)(x, len, false, 0, out) : HF(softmax)(x, len, false, 0, out));
    CHECK_CLOSE(out, ref::softmax(test::to_ref(x), {n}, false, 0, log), test::rtol);
  }
}
