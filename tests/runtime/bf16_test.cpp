// bfloat16 GEMMs end to end, on CPUs with AVX-512 BF16 (ctest runtime.bfloat16
// reports them skipped elsewhere; int8_test.cpp checks the error there): the
// weights held, the kernels run, the logits' error against float32 at d_model 512,
// and greedy agreement with float32 on a trained model.
#include "fixtures.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using fixtures::load;
using halformer::Model;

namespace {
double rms(const std::vector<float>& v) {
  double s = 0;
  for (float x : v)
    s += double(x) * x;
  return std::sqrt(s / double(v.size()));
}
} // namespace

TEST_CASE("a bfloat16 model holds bfloat16 GEMM weights and runs the _bf16 kernels", "[bf16]") {
  Model f = load("base_width", "float32"), h = load("base_width", "bfloat16");
  CHECK(h.compute_type() == "bfloat16");
  // GEMM weights: 4 bytes -> 2; embedding tables (here ~7% of the float32
  // weights) stay float32, and a tied generator gets bfloat16 panels of its own.
  INFO("float32 " << f.weight_bytes() << " bytes, bfloat16 " << h.weight_bytes());
  CHECK(double(h.weight_bytes()) < 0.6 * double(f.weight_bytes()));
  int gemms = 0, bf16 = 0;
  for (const auto& k : h.kernels()) {
    INFO(k);
    if (k.find("projection") != std::string::npos || k.find("ffn") != std::string::npos ||
        k.find("logits") != std::string::npos)
      ++gemms, bf16 += k.find("_bf16:") != std::string::npos;
    if (k.starts_with("embedding"))
      CHECK(k.starts_with("embedding:"));
  }
  CHECK(gemms > 0);
  CHECK(bf16 == gemms);
}

TEST_CASE("bfloat16 logits stay close to float32's at Transformer-base width", "[bf16]") {
  // bfloat16 keeps 8 significant bits: a weight or input errs by up to 2^-9
  // relative, a GEMM output by ~2^-9 of its rms. This random-weight model is
  // chaotic (post-LN, sharp attention: its int8 logits differ from float32's by
  // 15-43%), and amplifies that to 2.0% of the logits' rms (worst element 14%) on a
  // Sapphire Rapids-class Xeon; a wrong weight or layout errs by O(100%).
  Model f = load("base_width", "float32"), h = load("base_width", "bfloat16");
  const auto [lf, lh] = fixtures::logits_of(f, h, "base_width");
  REQUIRE(lf.size() == lh.size());
  std::vector<float> diff(lf.size());
  double worst = 0;
  for (std::size_t i = 0; i < lf.size(); ++i)
    diff[i] = lh[i] - lf[i], worst = std::max(worst, double(std::abs(diff[i])));
  const double rel = rms(diff) / rms(lf);
  INFO("rms error " << rel << " of the logits' rms, worst " << worst / rms(lf));
  CHECK(rel > 0); // the bfloat16 kernels ran, not float32's
  CHECK(rel < 0.05);
  CHECK(worst / rms(lf) < 0.4);
}

TEST_CASE("bfloat16 greedy outputs agree with float32's on >= 95% of a trained model's sentences", "[bf16][decode]") {
  const auto a = fixtures::trained_copy_agreement("bfloat16");
  INFO(a.same << " of " << a.sentences << " identical; float32 copied " << a.copies << " exactly");
  REQUIRE(a.sentences == 64);
  CHECK(a.copies >= 16);
  CHECK(a.same >= 0.95 * 64);
}
