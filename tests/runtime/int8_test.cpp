// int8 GEMMs end to end: the load-time quantization of the weights, what stays
// resident, the compute-type option's errors, and greedy agreement with float32
// on a trained model. (int8_parity.py checks the int8 logits against PyTorch
// running the same quantized arithmetic.)
#include "fixtures.hpp"
#include "halformer_kernels.h"
#include "weights.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>

using Catch::Matchers::Contains;
using fixtures::load;
using halformer::Model;

TEST_CASE("weights are quantized per output row, half to even, within +-127", "[int8]") {
  // Row 0: a max of 127 steps of 0.5 -> step 0.5, values x / 0.5; ties 1.25 / 0.5 =
  // 2.5 -> 2 and 1.75 / 0.5 = 3.5 -> 4. Row 1: zeros. Row 2: negative max.
  const std::vector<float> w{63.5f, 1.25f, 1.75f, -0.25f, 0, 0, 0, 0, -2.54f, 1.27f, 0.01f, 0};
  const auto q = halformer::quantize_rows(w, 3, 4);
  CHECK(q.steps == std::vector<float>{0.5f, 0.0f, 2.54f / 127});
  CHECK(std::vector<int>(q.values.begin(), q.values.begin() + 4) == std::vector<int>{127, 2, 4, 0});
  CHECK(std::vector<int>(q.values.begin() + 4, q.values.begin() + 8) == std::vector<int>{0, 0, 0, 0});
  CHECK(std::vector<int>(q.values.begin() + 8, q.values.end()) == std::vector<int>{-127, 64, 0, 0});
  // Random rows: every value within half a step of the weight.
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  std::vector<float> r(64 * 33);
  for (float& v : r)
    v = g(rng);
  const auto qr = halformer::quantize_rows(r, 64, 33);
  for (int o = 0; o < 64; ++o)
    for (int i = 0; i < 33; ++i) {
      const float step = qr.steps[std::size_t(o)];
      CHECK(std::abs(qr.values[std::size_t(o) * 33 + i]) <= 127);
      CHECK(std::abs(r[std::size_t(o) * 33 + i] - qr.values[std::size_t(o) * 33 + i] * step) <= 0.5f * step * 1.0001f);
    }
}

TEST_CASE("an int8 model keeps only int8 weights resident", "[int8]") {
  Model f = load("base_width", "float32"), q = load("base_width", "int8");
  CHECK(q.compute_type() == "int8");
  CHECK(f.compute_type() == "float32");
  // Every GEMM weight and embedding table: 4 bytes -> 1 byte and a step and a sum per row;
  // biases and norms (~0.3% of the weights) stay float32.
  INFO("float32 " << f.weight_bytes() << " bytes, int8 " << q.weight_bytes());
  CHECK(double(q.weight_bytes()) < 0.27 * double(f.weight_bytes()));
  bool int8_kernels = true;
  for (const auto& k : q.kernels())
    if (k.find("projection") != std::string::npos || k.find("ffn") != std::string::npos ||
        k.find("logits") != std::string::npos || k.find("embedding") != std::string::npos)
      int8_kernels &= k.find("_int8:") != std::string::npos;
  CHECK(int8_kernels);
}

TEST_CASE("compute types: unknown and unavailable ones are errors naming the problem", "[int8]") {
  CHECK_THROWS_WITH(load("post_ln_relu", "int4"), Contains("unknown compute type 'int4'") && Contains("float32, int8"));
  if (halformer_cpu_supports("avx512_vnni")) // bf16_test.cpp tests the model it loads
    CHECK(load("post_ln_relu", "bfloat16").compute_type() == "bfloat16");
  else
    CHECK_THROWS_WITH(load("post_ln_relu", "bfloat16"), Contains("needs AVX-512 BF16") && Contains("lacks"));
  CHECK(load("post_ln_relu", "auto").compute_type() == "int8"); // on the CPU
}

TEST_CASE("int8 greedy outputs agree with float32's on >= 95% of a trained model's sentences", "[int8][decode]") {
  // The copy-task model the build trains (bench/train_model.py, a fixed number of
  // steps): trained outputs lead by clear margins, as a real model's do. (Random
  // fixtures do not: their decisions are near-ties that any int8 scheme flips;
  // int8_parity.py checks their logits against the exact quantized arithmetic.)
  const auto a = fixtures::trained_copy_agreement("int8");
  INFO(a.same << " of " << a.sentences << " identical; float32 copied " << a.copies << " exactly");
  REQUIRE(a.sentences == 64);
  CHECK(a.copies >= 16); // the model has learnt its task: its decisions are not near-ties
  CHECK(a.same >= 0.95 * 64);
}
