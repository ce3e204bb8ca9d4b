// A preset or model tuned with int8 GEMMs: each GEMM kernel's *_int8 variant at
// one shape (one knob set: no buckets), its batched decode step where the float
// kernel has one; attention's decode steps over float16 caches; the other
// kernels as they are.
#include "database.hpp"
#include "presets.hpp"
#include "tuner.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

using namespace halformer::tuner;

TEST_CASE("int8 presets tune each GEMM's int8 kernel at its batched decode step", "[tuner][int8]") {
  const auto float32 = preset("transformer-base"), int8 = typed_shapes(float32, "int8");
  std::map<std::string, std::string> shape_of;
  for (const auto& e : int8) {
    if (e.kernel.ends_with("_int8")) {
      CHECK(shape_of.count(e.kernel) == 0); // one shape each
      CHECK(e.primary);
    }
    shape_of.emplace(e.kernel, e.shape);
  }
  const std::map<std::string, std::string> want{
      {"qkv_projection_int8", "d_k=64,heads=8,t=1,batch=8"},
      {"kv_projection_int8", "d_k=64,heads=8,t=128,batch=8"}, // runs once per source: prefill only
      {"q_projection_int8", "d_k=64,heads=8,t=1,batch=8"},
      {"out_projection_int8", "d_k=64,heads=8,t=1,batch=8"},
      {"ffn_relu_int8", "d_model=512,d_ff=2048,t=1,batch=8"},
      {"logits_int8", "d_model=512,vocab=32000,t=1,batch=8"}};
  for (const auto& [kernel, shape] : want) {
    INFO(kernel);
    REQUIRE(shape_of.count(kernel));
    CHECK(shape_of[kernel] == canonical_shape(shape));
  }
  for (const std::string f : {"qkv_projection", "ffn_relu", "logits"})
    CHECK(shape_of.count(f) == 0);
  // Everything else keeps every shape of the float32 preset.
  const auto count = [](const std::vector<preset_entry>& v, const std::string& k) {
    return std::count_if(v.begin(), v.end(), [&](const preset_entry& e) { return e.kernel == k; });
  };
  for (const std::string k : {"layernorm", "embedding", "beam_candidates"})
    CHECK(count(int8, k) == count(float32, k));
  // Attention: the encoder's (prefill) in float32, the decode steps over float16
  // caches, the batch's step first (its section's values).
  CHECK(count(int8, "attention") == 1);
  CHECK(count(int8, "attention") + count(int8, "attention_f16kv") == count(float32, "attention"));
  const auto f16kv =
      std::find_if(int8.begin(), int8.end(), [](const auto& e) { return e.kernel == "attention_f16kv"; });
  REQUIRE(f16kv != int8.end());
  CHECK(f16kv->primary);
  CHECK(f16kv->shape == canonical_shape("d_k=64,heads=8,t=1,tk=128,batch=8,causal=1"));
  CHECK(std::count_if(int8.begin(), int8.end(),
                      [](const auto& e) { return e.kernel == "attention_f16kv" && e.primary; }) == 1);
}

TEST_CASE("bfloat16 presets name the *_bf16 kernels at the int8 kernels' shapes", "[tuner][bf16]") {
  const auto float32 = preset("transformer-base");
  const auto int8 = typed_shapes(float32, "int8"), bf16 = typed_shapes(float32, "bfloat16");
  REQUIRE(int8.size() == bf16.size());
  for (std::size_t i = 0; i < int8.size(); ++i) {
    std::string k = int8[i].kernel;
    if (k.ends_with("_int8"))
      k.replace(k.size() - 5, 5, "_bf16");
    CHECK(bf16[i].kernel == k);
    CHECK(bf16[i].shape == int8[i].shape);
  }
  CHECK(typed_shapes(float32, "float32").size() == float32.size());
  CHECK_THROWS_WITH(typed_shapes(float32, "int4"), Catch::Contains("unknown compute type 'int4'"));
}

// The knob file's avx512 section serves both the avx512 and the avx512_vnni code
// of the dot-product kernels: a CPU that runs the latter measures it.
TEST_CASE("dot-product kernels are measured as the code this CPU runs with the ISA's knobs", "[tuner][int8]") {
  kernel_info int8{"logits_int8", "kernel", "logits_int8", {}, 1, {}, true};
  kernel_info f32{"logits", "kernel", "logits", {}, 1, {}, false};
  tune_options o;
  o.isa = "avx512";
  CHECK(measured_target(int8, o) == target_of_isa("avx512"));
  o.dot_product_isa = "avx512_vnni";
  CHECK(measured_target(int8, o) == target_of_isa("avx512_vnni"));
  CHECK(measured_target(int8, o).find("avx512_zen4") != std::string::npos);
  CHECK(measured_target(f32, o) == target_of_isa("avx512"));
}
