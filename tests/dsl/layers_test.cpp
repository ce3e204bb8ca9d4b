// The encoder and decoder layer descriptions: the kernel sequence of each variant
// (post-LN / pre-LN), and their data flow: every tensor a step reads is a layer
// input, a weight, or written by an earlier step, and the layer writes its output.
#include "halformer/dsl/layers.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <set>

using namespace halformer::dsl;

namespace {
template <class Layer>
std::vector<std::string> check_flow(const Layer& layer, std::set<std::string> available, const std::string& result) {
  std::vector<std::string> functions;
  bool wrote_result = false;
  layers::walk(layer, [&](const auto& step) {
    functions.push_back(step.function);
    layers::for_each_operand(step, [&](const auto& op) {
      INFO(step.function << ": " << op.formal << " <- " << op.actual.name);
      if (!op.is_output && !layers::is_scalar(op.actual.kind))
        CHECK((available.count(op.actual.name) || op.actual.kind == layers::role::weight));
    });
    layers::for_each_operand(step, [&](const auto& op) {
      if (op.is_output)
        available.insert(op.actual.name), wrote_result |= op.actual.name == result;
    });
  });
  CHECK(wrote_result);
  return functions;
}

// Every weight a layer names, with the kernels' argument each feeds.
template <class Layer> std::set<std::string> weights_of(const Layer& layer) {
  std::set<std::string> names;
  layers::walk(layer, [&](const auto& step) {
    layers::for_each_operand(step, [&](const auto& op) {
      if (op.actual.kind == layers::role::weight)
        names.insert(op.actual.name);
    });
  });
  return names;
}
} // namespace

TEST_CASE("encoder layers: kernel order and data flow", "[layers]") {
  const std::set<std::string> inputs{"x", "src_lengths", "src_rows"};
  using v = std::vector<std::string>;
  CHECK(check_flow(layers::encoder_layer(hana::false_c, "relu"), inputs, "x") ==
        v{"qkv_projection", "attention", "out_projection", "layernorm", "ffn_relu", "layernorm"});
  CHECK(check_flow(layers::encoder_layer(hana::true_c, "gelu"), inputs, "x") ==
        v{"layernorm", "qkv_projection", "attention", "out_projection", "layernorm", "ffn_gelu"});
}

TEST_CASE("decoder layers: kernel order and data flow", "[layers]") {
  const std::set<std::string> inputs{"y", "memory", "src_lengths", "tgt_lengths", "src_rows", "tgt_rows"};
  using v = std::vector<std::string>;
  CHECK(check_flow(layers::decoder_layer(hana::false_c, "relu"), inputs, "y") ==
        v{"qkv_projection", "attention", "out_projection", "layernorm", "kv_projection", "q_projection", "attention",
          "out_projection", "layernorm", "ffn_relu", "layernorm"});
  CHECK(check_flow(layers::decoder_layer(hana::true_c, "relu"), inputs, "y") ==
        v{"layernorm", "qkv_projection", "attention", "out_projection", "kv_projection", "layernorm", "q_projection",
          "attention", "out_projection", "layernorm", "ffn_relu"});
}

TEST_CASE("decoder layers with float16 keys and values round each projection's into them", "[layers]") {
  const std::set<std::string> inputs{"y", "memory", "src_lengths", "tgt_lengths", "src_rows", "tgt_rows"};
  using v = std::vector<std::string>;
  const auto layer = layers::decoder_layer(hana::true_c, "relu", layers::int8_gemms, layers::float16_kv);
  CHECK(check_flow(layer, inputs, "y") == v{"layernorm", "qkv_projection_int8", "kv_to_float16", "attention_f16kv",
                                            "out_projection_int8", "kv_projection_int8", "kv_to_float16", "layernorm",
                                            "q_projection_int8", "attention_f16kv", "out_projection_int8", "layernorm",
                                            "ffn_relu_int8"});
  // Caches and per-source keys and values are float16; the float32 projections go
  // through the step's scratch ("k_new") or the layers' shared one ("memory_k").
  std::map<std::string, dtype> types;
  std::map<std::string, layers::role> roles;
  layers::walk(layer, [&](const auto& step) {
    layers::for_each_operand(step, [&](const auto& op) {
      if (!layers::is_scalar(op.actual.kind) && op.actual.kind != layers::role::weight) {
        INFO(step.function << ": " << op.formal << " <- " << op.actual.name);
        CHECK((!types.count(op.actual.name) || types[op.actual.name] == op.type)); // one type per tensor
        types[op.actual.name] = op.type, roles[op.actual.name] = op.actual.kind;
      }
    });
  });
  for (const char* half :
       {"self_attn.k_cache", "self_attn.v_cache", "multihead_attn.k_memory", "multihead_attn.v_memory"})
    CHECK(types.at(half) == dtype::f16);
  for (const char* scratch : {"self_attn.k_new", "self_attn.v_new", "memory_k", "memory_v"})
    CHECK(types.at(scratch) == dtype::f32);
  CHECK(roles.at("self_attn.k_cache") == layers::role::cache);
  CHECK(roles.at("memory_k") == layers::role::source_scratch); // runs once per source with the projection
  // The encoder keeps float32 keys and values.
  CHECK(check_flow(layers::encoder_layer(hana::true_c, "relu", layers::int8_gemms), {"x", "src_lengths", "src_rows"},
                   "x") ==
        v{"layernorm", "qkv_projection_int8", "attention", "out_projection_int8", "layernorm", "ffn_relu_int8"});
}

TEST_CASE("attention steps carry their masks as typed scalars", "[layers]") {
  std::vector<double> causal;
  std::vector<layers::role> offsets;
  layers::walk(layers::decoder_layer(hana::false_c, "relu"), [&](const auto& step) {
    layers::for_each_operand(step, [&](const auto& op) {
      if (op.formal == "causal") {
        CHECK(op.actual.kind == layers::role::constant);
        causal.push_back(op.actual.value);
      }
      if (op.formal == "offset")
        offsets.push_back(op.actual.kind);
    });
  });
  CHECK(causal == std::vector<double>{1, 0});
  CHECK(offsets == std::vector<layers::role>{layers::role::position, layers::role::constant});
}

TEST_CASE("attention steps read keys through the runtime's row tables", "[layers]") {
  // Encoder: each row's own keys; decoder: the self-attention cache by the beams'
  // table, the memory by source.
  const auto tables = [](const auto& layer) {
    std::vector<std::string> names;
    layers::walk(layer, [&](const auto& step) {
      layers::for_each_operand(step, [&](const auto& op) {
        if (op.formal == "kv_rows") {
          CHECK(op.actual.kind == layers::role::kv_rows);
          names.push_back(op.actual.name);
        }
      });
    });
    return names;
  };
  CHECK(tables(layers::encoder_layer(hana::false_c, "relu")) == std::vector<std::string>{"src_rows"});
  CHECK(tables(layers::decoder_layer(hana::true_c, "relu")) == std::vector<std::string>{"tgt_rows", "src_rows"});
}

TEST_CASE("layers name exactly the weights PyTorch's layers have (after repacking)", "[layers]") {
  using set = std::set<std::string>;
  const set attention{"w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "w_o", "b_o"};
  set encoder{"norm1.weight",   "norm1.bias",   "norm2.weight",   "norm2.bias",
              "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias"};
  set decoder = encoder;
  decoder.insert({"norm3.weight", "norm3.bias"});
  for (const auto& a : attention) {
    encoder.insert("self_attn." + a);
    decoder.insert("self_attn." + a);
    decoder.insert("multihead_attn." + a);
  }
  CHECK(weights_of(layers::encoder_layer(hana::false_c, "relu")) == encoder);
  CHECK(weights_of(layers::encoder_layer(hana::true_c, "gelu")) == encoder);
  CHECK(weights_of(layers::decoder_layer(hana::false_c, "relu")) == decoder);
  CHECK(weights_of(layers::decoder_layer(hana::true_c, "relu")) == decoder);
}

TEST_CASE("every kernel's interface comes from its DSL definition", "[layers]") {
  const auto qkv = kernels::interface_of("qkv_projection");
  std::vector<std::string> names;
  for (const auto& a : qkv.inputs)
    names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"x", "w_q", "w_k", "w_v", "b_q", "b_k", "b_v"});
  REQUIRE(qkv.outputs.size() == 3);
  CHECK(qkv.outputs[1].name == "k");
  CHECK(qkv.outputs[1].dims == std::vector<std::string>{"d_k", "t", "heads", "batch"});
  CHECK(qkv.schedule == "head_projection");
  const auto pick = kernels::interface_of("greedy_pick");
  CHECK(pick.outputs.at(0).type == dtype::i32);
  CHECK(pick.outputs.at(1).type == dtype::f32);
  const auto att = kernels::interface_of("attention");
  CHECK(att.inputs.at(1).dims == std::vector<std::string>{"d_k", "tk", "heads", "kv_row"});
  CHECK(att.inputs.at(3).name == "kv_rows");
  CHECK(att.inputs.at(3).type == dtype::i32);
  CHECK(att.inputs.at(3).dims == std::vector<std::string>{"tk", "batch"});
  CHECK(att.inputs.at(5).name == "causal");
  CHECK(att.inputs.at(5).type == dtype::boolean);
  CHECK(att.inputs.at(5).dims.empty());
  CHECK_THROWS_WITH(kernels::interface_of("atention"), Catch::Contains("no kernel named 'atention'"));
}

// The GEMM kernels are one template per family over the compute types
// (dsl/compute_types.hpp): each type's name, schedule, argument order and
// element types, as the C functions of the libraries take them.
TEST_CASE("the GEMM kernels of each compute type", "[layers]") {
  const auto signature = [](std::string_view name) {
    std::vector<std::string> args;
    for (const auto& a : kernels::interface_of(name).inputs)
      args.push_back(a.name + ":" + std::string(dtype_name(a.type)));
    return args;
  };
  CHECK(signature("qkv_projection_int8") ==
        std::vector<std::string>{"x:float32", "w_q:int8", "w_k:int8", "w_v:int8", "w_q_step:float32", "w_q_sums:int32",
                                 "w_k_step:float32", "w_k_sums:int32", "w_v_step:float32", "w_v_sums:int32",
                                 "b_q:float32", "b_k:float32", "b_v:float32"});
  CHECK(signature("kv_projection_bf16") ==
        std::vector<std::string>{"x:float32", "w_k:bfloat16", "w_v:bfloat16", "b_k:float32", "b_v:float32"});
  CHECK(signature("out_projection_int8") == std::vector<std::string>{"a:float32", "w:int8", "w_step:float32",
                                                                     "w_sums:int32", "b:float32", "residual:float32"});
  CHECK(signature("ffn_silu_int8") ==
        std::vector<std::string>{"x:float32", "residual:float32", "w1:int8", "w1_step:float32", "w1_sums:int32",
                                 "b1:float32", "w2:int8", "w2_step:float32", "w2_sums:int32", "b2:float32"});
  CHECK(signature("ffn_gelu") == std::vector<std::string>{"x:float32", "residual:float32", "w1:float32", "b1:float32",
                                                          "w2:float32", "b2:float32"});
  CHECK(signature("logits_bf16") == std::vector<std::string>{"x:float32", "w:bfloat16", "b:float32"});
  CHECK(kernels::interface_of("ffn_relu_bf16").schedule == "ffn_bf16");
  CHECK(kernels::interface_of("q_projection_int8").schedule == "head_projection_int8");
  CHECK(kernels::interface_of("logits_int8").schedule == "logits_int8");
  CHECK(kernels::cpu_only("out_projection_bf16"));
  CHECK_FALSE(kernels::cpu_only("out_projection_int8"));
  CHECK_FALSE(kernels::cpu_only("logits"));
}
