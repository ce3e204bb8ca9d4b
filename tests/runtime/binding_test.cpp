// The layer descriptions and the kernels they call are bound by argument name
// when a model loads: a weight the model lacks, an argument the description
// leaves out or names wrongly, an unknown kernel or a mistyped operand is an
// error naming it, never a buffer passed in another's place or a zero-filled
// stand-in. The order in which a description lists its operands is irrelevant.
#include "loaded_model.hpp"

#include "executor.hpp"
#include "halformer/dsl/halide_type.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using Catch::Contains;
using namespace halformer;
namespace layers = halformer::dsl::layers;

using fixtures::loaded_model;

namespace {

layers::flat_step& step_of(std::vector<layers::flat_step>& steps, const std::string& function) {
  auto s = std::find_if(steps.begin(), steps.end(), [&](const auto& x) { return x.function == function; });
  REQUIRE(s != steps.end());
  return *s;
}
layers::flat_operand& operand_of(layers::flat_step& s, const std::string& formal) {
  auto o = std::find_if(s.operands.begin(), s.operands.end(), [&](const auto& x) { return x.formal == formal; });
  REQUIRE(o != s.operands.end());
  return *o;
}

// The encoder output of `m` under `layers` for a fixed batch of two sources.
std::vector<float> encode(const loaded_model& m, const layer_descriptions& layers) {
  executor ex(m.config, m.weights, device::cpu, layers);
  ibuffer ids(5, 2), lengths(2);
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t)
      ids(t, b) = 3 + (7 * t + 5 * b) % (m.config.src_vocab - 3);
  lengths(0) = 5, lengths(1) = 3;
  ex.reserve({2, 5, 1});
  ex.encode(ids, lengths);
  const fbuffer mem = ex.memory();
  std::vector<float> out;
  mem.for_each_value([&](float v) { out.push_back(v); });
  return out;
}
} // namespace

TEST_CASE("the layer descriptions bind to every fixture's weights and the kernels", "[binding]") {
  for (const auto& name : fixtures::names()) {
    INFO(name);
    const loaded_model m(name);
    CHECK_NOTHROW(executor(m.config, m.weights, device::cpu));
  }
}

TEST_CASE("a misspelled weight name is a load error naming it", "[binding]") {
  const loaded_model m("post_ln_relu");
  auto layers = layer_descriptions::of(m.config);
  operand_of(step_of(layers.encoder, "qkv_projection"), "w_k").actual = "self_attn.w_kk";
  CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                    Contains("encoder layer 0, qkv_projection, argument 'w_k': the model has no weight "
                             "'self_attn.w_kk'"));
  auto dec = layer_descriptions::of(m.config);
  operand_of(step_of(dec.decoder, "ffn_relu"), "b2").actual = "linear2.bais";
  CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, dec),
                    Contains("decoder layer 0, ffn_relu, argument 'b2': the model has no weight 'linear2.bais'"));
  // The model's top binds the same way: embeddings, final norms, logits.
  auto top = layer_descriptions::of(m.config);
  operand_of(step_of(top.decoder_output, "logits"), "w").actual = "generator.weigth";
  CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, top),
                    Contains("decoder output, logits, argument 'w': the model has no weight 'generator.weigth'"));
}

TEST_CASE("the whole model is described: embeddings, final norms, logits, beam candidates, pick", "[binding]") {
  const loaded_model m("post_ln_relu");
  auto d = layer_descriptions::of(m.config);
  CHECK(step_of(d.encoder_input, "embedding").operands.size() == 8);
  CHECK(step_of(d.decoder_input, "embedding").operands.size() == 8);
  // Positions from the model's first (fairseq's pad + 1), the decoder's past the call's position.
  CHECK(operand_of(step_of(d.encoder_input, "embedding"), "offset").kind == layers::role::first_position);
  CHECK(operand_of(step_of(d.decoder_input, "embedding"), "offset").kind == layers::role::target_position);
  CHECK(operand_of(step_of(d.decoder_input, "embedding"), "frequency_step").kind == layers::role::frequency_step);
  CHECK(operand_of(step_of(d.encoder_input, "embedding"), "ids").kind == layers::role::tokens);
  CHECK(step_of(d.decoder_output, "logits").function == "logits");
  CHECK(operand_of(step_of(d.candidates, "beam_candidates"), "chunk_max").actual == "chunk_max");
  CHECK(operand_of(step_of(d.pick, "greedy_pick"), "ids").kind == layers::role::picked);
  // A model without final norms has none in its description.
  CHECK(d.encoder_output.size() == (m.config.final_norm ? 1u : 0u));
  CHECK(d.decoder_output.size() == (m.config.final_norm ? 2u : 1u));
  // Changing the description changes what runs: the encoder output without its final norm differs.
  if (m.config.final_norm) {
    auto no_norm = d;
    no_norm.encoder_output.clear();
    CHECK(encode(m, d) != encode(m, no_norm));
  }
}

TEST_CASE("a kernel argument the description leaves out or misnames is a load error", "[binding]") {
  const loaded_model m("post_ln_relu");
  SECTION("missing") {
    auto layers = layer_descriptions::of(m.config);
    auto& ops = step_of(layers.encoder, "qkv_projection").operands;
    ops.erase(std::find_if(ops.begin(), ops.end(), [](const auto& o) { return o.formal == "b_v"; }));
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("kernel qkv_projection: its argument 'b_v' is not given"));
  }
  SECTION("misnamed") {
    auto layers = layer_descriptions::of(m.config);
    operand_of(step_of(layers.encoder, "out_projection"), "residual").formal = "resid";
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("kernel out_projection: its argument 'residual' is not given"));
  }
  SECTION("given twice") {
    auto layers = layer_descriptions::of(m.config);
    operand_of(step_of(layers.encoder, "out_projection"), "residual").formal = "a";
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers), Contains("given twice"));
  }
  SECTION("an argument the kernel does not have") {
    auto layers = layer_descriptions::of(m.config);
    auto& s = step_of(layers.encoder, "layernorm");
    s.operands.push_back(s.operands.front());
    s.operands.back().formal = "residual";
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("kernel layernorm has no argument 'residual'"));
  }
  SECTION("an unknown kernel") {
    auto layers = layer_descriptions::of(m.config);
    step_of(layers.encoder, "ffn_relu").function = "ffn_swish";
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("no kernel 'ffn_swish' in this library"));
  }
  SECTION("a mistyped operand") {
    auto layers = layer_descriptions::of(m.config);
    operand_of(step_of(layers.decoder, "attention"), "lengths").type = dsl::dtype::f32;
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("kernel attention, argument 'lengths': its elements are int32, given float32"));
  }
  SECTION("an output passed as an input") {
    auto layers = layer_descriptions::of(m.config);
    operand_of(step_of(layers.encoder, "qkv_projection"), "q").is_output = false;
    CHECK_THROWS_WITH(executor(m.config, m.weights, device::cpu, layers),
                      Contains("argument 'q': it is an output buffer, given as an input buffer"));
  }
}

TEST_CASE("operands bind by name: their order in a description does not matter", "[binding]") {
  const loaded_model m("pre_ln_gelu");
  const auto reference = encode(m, layer_descriptions::of(m.config));
  auto shuffled = layer_descriptions::of(m.config);
  for (auto& s : shuffled.encoder)
    std::reverse(s.operands.begin(), s.operands.end()); // x/residual, w_q/w_k/w_v: all positions change
  const auto got = encode(m, shuffled);
  REQUIRE(got.size() == reference.size());
  CHECK(std::memcmp(got.data(), reference.data(), got.size() * sizeof(float)) == 0);
  // And a real swap of two same-shaped tensors changes the result (the check can fail).
  auto swapped = layer_descriptions::of(m.config);
  auto& ffn = step_of(swapped.encoder, "ffn_gelu");
  std::swap(operand_of(ffn, "x").actual, operand_of(ffn, "residual").actual);
  CHECK(encode(m, swapped) != reference);
}

TEST_CASE("every compiled kernel's arguments are its DSL interface, in order", "[binding]") {
  std::vector<const halformer_kernel*> lists{halformer_kernels_cpu()};
#if HALFORMER_GPU
  lists.push_back(halformer_kernels_opencl());
  lists.push_back(halformer_kernels_cuda());
#endif
  for (const halformer_kernel* list : lists) {
    std::size_t listed = 0;
    for (const halformer_kernel* k = list; k->name; ++k)
      ++listed;
    std::size_t in_dsl = 0;
    dsl::hana::for_each(dsl::kernels::all, [&](auto type) {
      using K = typename decltype(type)::type;
      ++in_dsl;
      const auto want = dsl::kernels::interface_of(K{});
      INFO("kernel " << want.name);
      const halformer_kernel* k = halformer_find_kernel(list, std::string(want.name).c_str());
      if (list != halformer_kernels_cpu() && dsl::kernels::cpu_only_v<K>) {
        CHECK(k == nullptr);
        --in_dsl;
        return;
      }
      REQUIRE(k != nullptr);
      const halide_filter_metadata_t* md = k->metadata();
      REQUIRE(std::size_t(md->num_arguments) == want.inputs.size() + want.outputs.size());
      for (int i = 0; i < md->num_arguments; ++i) {
        const bool output = std::size_t(i) >= want.inputs.size();
        const auto& a = output ? want.outputs[std::size_t(i) - want.inputs.size()] : want.inputs[std::size_t(i)];
        const halide_filter_argument_t& got = md->arguments[i];
        INFO("argument " << i << " '" << got.name << "'");
        CHECK(std::string(got.name) == a.name);
        CHECK(got.dimensions == a.rank());
        CHECK(got.kind == (output           ? halide_argument_kind_output_buffer
                           : a.dims.empty() ? halide_argument_kind_input_scalar
                                            : halide_argument_kind_input_buffer));
        const halide_type_t t = halformer::dsl::halide_type_of(a.type);
        CHECK((got.type.code == t.code && got.type.bits == t.bits));
      }
    });
    CHECK(listed == in_dsl); // no library kernel that the DSL does not define
  }
}
