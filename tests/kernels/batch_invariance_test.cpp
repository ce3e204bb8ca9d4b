// Decode steps are batch-invariant, bitwise: a row's output is the same whether
// it is decoded alone (one-row tiles) or in a batch of any size (register tiles
// of several rows, a tail shifted inwards), because every branch sums each
// output's reduction in the same order, from its bias (cpu/panels.hpp,
// dsl/lower_panels.hpp). The runtime's "same scores alone or in any batch" rests
// on this (tests/runtime/parity_test.cpp checks it end to end at small batches).
#include "support.hpp"

#include "halformer/weight_layout.hpp"

#include <functional>

using test::Buffer;

namespace {
// Calls `kernel(x, out)` on the whole batch (d, 1, rows) and on each row alone,
// and requires every row's outputs to agree bit for bit.
void check_rows_alone(const Buffer<float>& x, int out_width,
                      const std::function<int(Buffer<float>, Buffer<float>)>& kernel) {
  const int D = x.dim(0).extent(), rows = x.dim(2).extent();
  Buffer<float> all(out_width, 1, rows);
  REQUIRE(kernel(x, all) == 0);
  for (int r = 0; r < rows; ++r) {
    Buffer<float> one(D, 1, 1), alone(out_width, 1, 1);
    for (int d = 0; d < D; ++d)
      one(d, 0, 0) = x(d, 0, r);
    REQUIRE(kernel(one, alone) == 0);
    int differing = 0;
    for (int o = 0; o < out_width; ++o)
      differing += alone(o, 0, 0) != all(o, 0, r);
    INFO("row " << r << " of " << rows);
    CHECK(differing == 0);
  }
}
} // namespace

TEST_CASE("decode-step GEMMs give a row the same bits alone and in any batch", "[gemm][batch]") {
  for (int rows : {7, 130}) {
    INFO(rows << " rows");
    const int D = 96, V = 333, F = 200;
    auto x = test::random({D, 1, rows});
    auto w = test::panels(test::random({D, V}, 1.0f / std::sqrt(float(D))), 1), b = test::random({V}, 0.1f);
    check_rows_alone(x, V, [&](Buffer<float> in, Buffer<float> out) { return HF(logits)(in, w, b, out); });
    auto w1 = test::panels(test::random({D, F}, 1.0f / std::sqrt(float(D))), 1), b1 = test::random({F}, 0.1f);
    auto w2 = test::panels(test::random({F, D}, 1.0f / std::sqrt(float(F))), 1), b2 = test::random({D}, 0.1f);
    check_rows_alone(x, D, [&](Buffer<float> in, Buffer<float> out) {
      Buffer<float> residual(D, 1, in.dim(2).extent()); // zeros: the residual add is exact anyway
      residual.fill(0.0f);
      return HF(ffn_relu)(in, residual, w1, b1, w2, b2, out);
    });
  }
}

#ifndef HALFORMER_TEST_OPENCL // bfloat16 kernels: the CPU library only
// bfloat16 weights in panels take the float32 GEMMs' tile branches, each lane
// summing a pair of products a step: a row's bits the same alone and in a batch
// (emulated pairs on CPUs without AVX-512 BF16 as well).
TEST_CASE("bfloat16 decode-step GEMMs give a row the same bits alone and in any batch", "[gemm][batch][bf16]") {
  const auto bf16_panels = [](const Buffer<float>& logical, int inputs) {
    std::vector<int> dims;
    for (int d = 0; d < logical.dimensions(); ++d)
      dims.push_back(logical.dim(d).extent());
    return halformer::bf16_panels(logical.data(), dims, inputs);
  };
  for (int rows : {7, 130}) {
    INFO(rows << " rows");
    const int D = 97, V = 333, F = 200; // D odd: the last input pair is half padding
    auto x = test::random({D, 1, rows});
    auto w = bf16_panels(test::random({D, V}, 1.0f / std::sqrt(float(D))), 1);
    auto b = test::random({V}, 0.1f);
    check_rows_alone(x, V, [&](Buffer<float> in, Buffer<float> out) { return hf_logits_bf16(in, w, b, out); });
    auto w1 = bf16_panels(test::random({D, F}, 1.0f / std::sqrt(float(D))), 1);
    auto w2 = bf16_panels(test::random({F, D}, 1.0f / std::sqrt(float(F))), 1);
    auto b1 = test::random({F}, 0.1f), b2 = test::random({D}, 0.1f);
    check_rows_alone(x, D, [&](Buffer<float> in, Buffer<float> out) {
      Buffer<float> residual(D, 1, in.dim(2).extent());
      residual.fill(0.0f);
      return hf_ffn_relu_bf16(in, residual, w1, b1, w2, b2, out);
    });
  }
}
#endif

// An encoder's sentence alone or padded in a batch: the FFN's prefill rows give
// the bits of the row alone (a decode step), whatever t, batch and widths
// (partial panels and panel groups), with a residual (its add must not
// reassociate with the bias per branch).
TEST_CASE("an FFN row gives the same bits in a prefill of any shape as alone", "[ffn][batch]") {
  for (auto [D, F] : {std::pair{96, 200}, std::pair{32, 64}})
    for (int B : {1, 3})
      for (int T : {2, 3, 5, 9}) {
        INFO("d_model " << D << " d_ff " << F << " batch " << B << " t " << T);
        auto w1 = test::panels(test::random({D, F}, 1.0f / std::sqrt(float(D))), 1), b1 = test::random({F}, 0.1f);
        auto w2 = test::panels(test::random({F, D}, 1.0f / std::sqrt(float(F))), 1), b2 = test::random({D}, 0.1f);
        auto x = test::random({D, T, B}), residual = test::random({D, T, B});
        Buffer<float> out(D, T, B);
        REQUIRE(HF(ffn_relu)(x, residual, w1, b1, w2, b2, out) == 0);
        int differing = 0;
        for (int b = 0; b < B; ++b)
          for (int t = 0; t < T; ++t) {
            Buffer<float> x1(D, 1, 1), r1(D, 1, 1), alone(D, 1, 1);
            for (int d = 0; d < D; ++d)
              x1(d, 0, 0) = x(d, t, b), r1(d, 0, 0) = residual(d, t, b);
            REQUIRE(HF(ffn_relu)(x1, r1, w1, b1, w2, b2, alone) == 0);
            for (int o = 0; o < D; ++o)
              differing += alone(o, 0, 0) != out(o, t, b);
          }
        CHECK(differing == 0);
      }
}
