// The encoder and decoder layer descriptions: the kernel sequence of each variant
// (post-LN / pre-LN), and their data flow: every tensor a step reads is a layer
// input, a weight, or written by an earlier step, and the layer writes its output.
#include "halformer/dsl/layers.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>

using namespace halformer::dsl;

namespace {
bool is_weight(const std::string& n) {
  for (const char* suffix : {".weight", ".bias"})
    if (n.size() > std::strlen(suffix) && n.compare(n.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return true;
  for (const char* part : {".w_", ".b_"})
    if (n.find(part) != std::string::npos)
      return true;
  return false;
}

template <class Layer>
std::vector<std::string> check_flow(const Layer& layer, std::set<std::string> available, const std::string& result) {
  std::vector<std::string> functions;
  bool wrote_result = false;
  layers::walk(layer, [&](const auto& step) {
    functions.push_back(step.function);
    layers::for_each_operand(step, [&](const std::string& formal, const std::string& actual, bool is_output) {
      INFO(step.function << ": " << formal << " <- " << actual);
      if (!is_output)
        CHECK((available.count(actual) || is_weight(actual)));
    });
    layers::for_each_operand(step, [&](const std::string&, const std::string& actual, bool is_output) {
      if (is_output)
        available.insert(actual), wrote_result |= actual == result;
    });
  });
  CHECK(wrote_result);
  return functions;
}
} // namespace

TEST_CASE("encoder layers: kernel order and data flow", "[layers]") {
  const std::set<std::string> inputs{"x", "src_lengths"};
  using v = std::vector<std::string>;
  CHECK(check_flow(layers::encoder_layer(hana::false_c, "relu"), inputs, "x") ==
        v{"qkv_projection", "attention", "out_projection", "layernorm", "ffn_relu", "layernorm"});
  CHECK(check_flow(layers::encoder_layer(hana::true_c, "gelu"), inputs, "x") ==
        v{"layernorm", "qkv_projection", "attention", "out_projection", "layernorm", "ffn_gelu"});
}

TEST_CASE("decoder layers: kernel order and data flow", "[layers]") {
  const std::set<std::string> inputs{"y", "memory", "src_lengths", "tgt_lengths"};
  using v = std::vector<std::string>;
  CHECK(check_flow(layers::decoder_layer(hana::false_c, "relu"), inputs, "y") ==
        v{"qkv_projection", "attention", "out_projection", "layernorm", "kv_projection", "q_projection", "attention",
          "out_projection", "layernorm", "ffn_relu", "layernorm"});
  CHECK(check_flow(layers::decoder_layer(hana::true_c, "relu"), inputs, "y") ==
        v{"layernorm", "qkv_projection", "attention", "out_projection", "kv_projection", "layernorm", "q_projection",
          "attention", "out_projection", "layernorm", "ffn_relu"});
}

TEST_CASE("attention steps carry their masks", "[layers]") {
  std::vector<std::string> causal;
  layers::walk(layers::decoder_layer(hana::false_c, "relu"), [&](const auto& step) {
    for (const auto& [formal, value] : step.scalars)
      if (formal == "causal")
        causal.push_back(value);
  });
  CHECK(causal == std::vector<std::string>{"causal", "not_causal"});
}
