// The decoder's attention keys and values in float16 (load_options::kv_cache):
// which models keep them so, the option's errors, and decoding with them against
// float32 keys and values on the trained copy-task model (greedy, and beams whose
// finished sentences leave the batch, which moves the float16 per-source tensors).
// The kernels are checked against float64 in the kernel tests (attention_f16kv,
// kv_to_float16); int8_parity.py checks an int8 model's logits with them against
// PyTorch running the same arithmetic.
#include "fixtures.hpp"
#include "halformer_kernels.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using Catch::Matchers::Contains;
using halformer::Model;

namespace {
Model load(const std::string& name, const std::string& compute_type, const std::string& kv_cache) {
  halformer::load_options o;
  o.compute_type = compute_type, o.kv_cache = kv_cache;
  return Model::load(fixtures::dir(name), o);
}

bool runs(const Model& m, const std::string& kernel) {
  const auto k = m.kernels();
  return std::any_of(k.begin(), k.end(), [&](const std::string& line) { return line.rfind(kernel + ":", 0) == 0; });
}

// Sentences (best hypotheses) two models translate identically.
int same_outputs(Model& a, Model& b, const halformer::decode_options& o, int& sentences) {
  const auto src = fixtures::trained_sources();
  const auto ha = a.translate(src, o), hb = b.translate(src, o);
  sentences = int(src.size());
  int same = 0;
  for (std::size_t i = 0; i < src.size(); ++i)
    same += ha[i][0].tokens == hb[i][0].tokens;
  return same;
}
} // namespace

TEST_CASE("keys and values are float16 with int8 or bfloat16 GEMMs on the CPU, else float32", "[kv_cache]") {
  const Model q = load("post_ln_relu", "int8", "auto"), f = load("post_ln_relu", "float32", "auto");
  CHECK(q.kv_cache() == "float16");
  CHECK(f.kv_cache() == "float32");
  CHECK(runs(q, "attention_f16kv"));
  CHECK(runs(q, "kv_to_float16"));
  CHECK(runs(q, "attention")); // the encoder's self-attention stays float32
  CHECK(!runs(f, "attention_f16kv"));
  CHECK(!runs(f, "kv_to_float16"));
  // On request either way.
  const Model q32 = load("post_ln_relu", "int8", "float32"), f16 = load("post_ln_relu", "float32", "float16");
  CHECK(q32.kv_cache() == "float32");
  CHECK(!runs(q32, "attention_f16kv"));
  CHECK(f16.kv_cache() == "float16");
  CHECK(runs(f16, "attention_f16kv"));
}

TEST_CASE("kv cache types: unknown ones and float16 on a GPU are errors naming the problem", "[kv_cache]") {
  CHECK_THROWS_WITH(load("post_ln_relu", "int8", "bfloat16"),
                    Contains("unknown kv cache type 'bfloat16'") && Contains("float32, float16 or auto"));
#if HALFORMER_GPU
  halformer::load_options o;
  o.device = "opencl", o.kv_cache = "float16";
  if (halformer_device_available("opencl"))
    CHECK_THROWS_WITH(Model::load(fixtures::dir("post_ln_relu"), o),
                      Contains("float16 keys and values run on the CPU"));
  else
    WARN("no OpenCL device: the GPU case is not checked");
#endif
}

TEST_CASE("float16 keys and values decode a trained model as float32 ones do", "[kv_cache][decode]") {
  // As int8_test.cpp's agreement with float32: the trained model's decisions lead
  // by clear margins, which float16's 2^-12 relative rounding leaves alone.
  for (const std::string compute : {"float32", "int8"}) {
    Model kv32 = load("trained_copy", compute, "float32"), kv16 = load("trained_copy", compute, "float16");
    for (const int beam : {1, 4}) {
      halformer::decode_options o;
      o.max_len = 30, o.beam = beam;
      int sentences = 0;
      const int same = same_outputs(kv32, kv16, o, sentences);
      INFO(compute << " GEMMs, beam " << beam << ": " << same << " of " << sentences << " identical");
      REQUIRE(sentences == 64);
      CHECK(same >= 0.95 * 64);
    }
  }
}

TEST_CASE("float16 keys and values keep a float32 model's logits at Transformer-base width", "[kv_cache]") {
  // A key or value rounded to float16 errs by up to 2^-12 of itself; this random
  // model is chaotic (its int8 logits differ from float32's by 15-43%) and
  // amplifies that to 0.15% of the logits' rms, worst element 2.1% (Zen 5); a
  // wrong cache row, layout or type errs by O(100%).
  Model kv32 = load("base_width", "float32", "float32"), kv16 = load("base_width", "float32", "float16");
  const auto [l32, l16] = fixtures::logits_of(kv32, kv16, "base_width");
  REQUIRE(l32.size() == l16.size());
  double ss = 0, ss_diff = 0, worst = 0;
  for (std::size_t i = 0; i < l32.size(); ++i) {
    const double d = double(l16[i]) - double(l32[i]);
    ss += double(l32[i]) * l32[i], ss_diff += d * d, worst = std::max(worst, std::abs(d));
  }
  const double rms = std::sqrt(ss / double(l32.size())), rel = std::sqrt(ss_diff / double(l32.size())) / rms;
  INFO("rms error " << rel << " of the logits' rms, worst " << worst / rms);
  CHECK(rel > 0); // the float16 kernels ran
  CHECK(rel < 0.01);
  CHECK(worst / rms < 0.1);
}
