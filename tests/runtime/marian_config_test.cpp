// MarianMT and M2M100 / NLLB config.json (and generation_config.json) mapping: defaults, the keys
// that change semantics, and errors naming the key.
#include "marian_config.hpp"

#include "halformer/error.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>

using Catch::Matchers::Contains;
using nlohmann::json;

namespace {
// An OPUS-MT config.json (Helsinki-NLP/opus-mt-en-de's keys), trimmed.
json opus_mt() {
  return json::parse(R"({
    "model_type": "marian", "activation_function": "swish", "d_model": 512, "encoder_attention_heads": 8,
    "decoder_attention_heads": 8, "encoder_layers": 6, "decoder_layers": 6, "encoder_ffn_dim": 2048,
    "decoder_ffn_dim": 2048, "vocab_size": 58101, "decoder_vocab_size": 58101, "max_position_embeddings": 512,
    "pad_token_id": 58100, "decoder_start_token_id": 58100, "eos_token_id": 0, "forced_eos_token_id": 0,
    "bad_words_ids": [[58100]], "scale_embedding": true, "share_encoder_decoder_embeddings": true,
    "normalize_before": false, "static_position_embeddings": true, "num_beams": 4, "max_length": 512})");
}
halformer::model_config parse(const json& j, const json& generation = json::object()) {
  return halformer::parse_marian_config(j, "config.json", generation, "generation_config.json", nullptr);
}
} // namespace

TEST_CASE("an OPUS-MT config maps onto halformer's model", "[marian][config]") {
  const auto c = parse(opus_mt());
  CHECK(c.format == "marian");
  CHECK((c.d_model == 512 && c.nhead == 8 && c.num_encoder_layers == 6 && c.dim_feedforward == 2048));
  CHECK((c.src_vocab == 58101 && c.tgt_vocab == 58101 && c.shared_embeddings && c.tied_output));
  CHECK(c.activation == "silu");
  CHECK(c.positions == halformer::position_layout::split);
  CHECK((c.scale_embedding && !c.norm_first && !c.final_norm && c.max_positions == 512));
  CHECK((c.bos_id == 58100 && c.eos_id == 0 && c.pad_id == 58100 && c.forced_eos));
  CHECK(c.banned_ids == std::vector<int>{58100});
  CHECK(c.beam == halformer::model_config::beam_rules::transformers);
}

TEST_CASE("generation_config.json's decoding rules win over config.json's", "[marian][config]") {
  const auto c = parse(opus_mt(), json{{"decoder_start_token_id", 7}, {"eos_token_id", 3}});
  CHECK((c.bos_id == 7 && c.eos_id == 3));
  CHECK(c.banned_ids.empty()); // generate() would not ban what the generation config does not name
  CHECK(!c.forced_eos);
}

TEST_CASE("normalize_before makes pre-norm layers with final norms, with a warning", "[marian][config]") {
  auto j = opus_mt();
  j["normalize_before"] = true;
  std::vector<std::string> warnings;
  const auto c = halformer::parse_marian_config(j, "config.json", json::object(), "generation_config.json", &warnings);
  CHECK((c.norm_first && c.final_norm));
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("transformers' MarianMTModel ignores this key"));
}

TEST_CASE("absent keys take MarianConfig's defaults", "[marian][config]") {
  const auto c = parse(json{{"model_type", "marian"}});
  CHECK((c.d_model == 1024 && c.nhead == 16 && c.num_encoder_layers == 12 && c.dim_feedforward == 4096));
  CHECK((c.src_vocab == 58101 && c.pad_id == 58100 && c.bos_id == 58100 && c.eos_id == 0));
  CHECK((c.activation == "gelu" && !c.scale_embedding && c.max_positions == 1024));
}

TEST_CASE("unsupported or inconsistent Marian keys are errors naming them", "[marian][config][bad_input]") {
  struct change {
    std::function<void(json&)> edit;
    std::string message;
  };
  const std::vector<change> changes{
      {[](json& j) { j["activation_function"] = "gelu_new"; }, "activation_function 'gelu_new' is not supported"},
      {[](json& j) { j["decoder_attention_heads"] = 4; }, "encoder_attention_heads and decoder_attention_heads differ"},
      {[](json& j) { j["decoder_ffn_dim"] = 1024; }, "encoder_ffn_dim and decoder_ffn_dim differ"},
      {[](json& j) { j["d_model"] = 500; }, "d_model (500) is not a multiple of encoder_attention_heads (8)"},
      {[](json& j) { j["bad_words_ids"] = json::parse("[[1, 2]]"); }, "only single tokens"},
      {[](json& j) { j["forced_eos_token_id"] = 5; }, "forced_eos_token_id 5 differs from eos_token_id 0"},
      {[](json& j) { j["eos_token_id"] = json::parse("[0, 1]"); }, "'eos_token_id' lists 2 ids"},
      {[](json& j) { j["pad_token_id"] = 60000; }, "pad_token_id 60000 is outside the target vocabulary"},
      {[](json& j) { j["scale_embedding"] = "yes"; }, "'scale_embedding' must be true or false"},
      {[](json& j) { j["max_position_embeddings"] = 0; }, "'max_position_embeddings' = 0 is out of range"},
  };
  for (const auto& c : changes) {
    auto j = opus_mt();
    c.edit(j);
    INFO(j.dump());
    CHECK_THROWS_WITH(parse(j), Contains(c.message));
  }
}

TEST_CASE("a model type halformer cannot run is an error naming it", "[marian][config][bad_input]") {
  CHECK_THROWS_WITH(halformer::model_config::load_dir("/nonexistent", nullptr), Contains("cannot open"));
  const auto dir = std::filesystem::temp_directory_path() / "halformer_bart_config";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"model_type": "bart", "d_model": 16})";
  CHECK_THROWS_WITH(halformer::model_config::load_dir(dir.string(), nullptr),
                    Contains("model_type 'bart' is not supported"));
  std::filesystem::remove_all(dir);
}

namespace {
// An NLLB-200 config.json (facebook/nllb-200-distilled-600M's keys), trimmed.
json nllb() {
  return json::parse(R"({
    "model_type": "m2m_100", "activation_function": "relu", "d_model": 1024, "encoder_attention_heads": 16,
    "decoder_attention_heads": 16, "encoder_layers": 12, "decoder_layers": 12, "encoder_ffn_dim": 4096,
    "decoder_ffn_dim": 4096, "vocab_size": 256206, "max_position_embeddings": 1024, "pad_token_id": 1,
    "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2, "scale_embedding": true,
    "tie_word_embeddings": true, "dropout": 0.1, "layerdrop": 0})");
}
halformer::model_config parse_m2m100(const json& j, const json& generation = json::object()) {
  return halformer::parse_m2m100_config(j, "config.json", generation, "generation_config.json", nullptr);
}
} // namespace

TEST_CASE("an NLLB config maps onto pre-norm layers with fairseq's positions", "[m2m100][config]") {
  const auto c = parse_m2m100(nllb());
  CHECK(c.format == "m2m_100");
  CHECK((c.d_model == 1024 && c.nhead == 16 && c.num_encoder_layers == 12 && c.dim_feedforward == 4096));
  CHECK((c.src_vocab == 256206 && c.tgt_vocab == 256206 && c.shared_embeddings && c.tied_output));
  CHECK((c.norm_first && c.final_norm && c.scale_embedding && c.activation == "relu"));
  CHECK((c.positions == halformer::position_layout::split &&
         c.frequencies == halformer::position_frequencies::fairseq && c.first_position == 2));
  CHECK(c.frequency_step() == Approx(std::log(10000.0) / 511).epsilon(1e-12));
  CHECK((c.bos_id == 2 && c.eos_id == 2 && c.pad_id == 1 && !c.forced_eos && c.forced_bos_id == -1));
  CHECK(parse_m2m100(nllb(), json{{"decoder_start_token_id", 2}, {"forced_bos_token_id", 256057}}).forced_bos_id ==
        256057);
  json pad0 = nllb();
  pad0["pad_token_id"] = 0;
  CHECK(parse_m2m100(pad0).first_position == 1); // positions count from pad + 1
}

TEST_CASE("M2M100 keys halformer cannot run are errors naming them", "[m2m100][config][bad_input]") {
  for (const auto& [key, value, needle] : std::vector<std::tuple<std::string, json, std::string>>{
           {"d_model", 2, "must be even and at least 4"},
           {"d_model", 63, "d_model 63"},
           {"decoder_ffn_dim", 64, "encoder_ffn_dim and decoder_ffn_dim differ"},
           {"activation_function", "tanh", "activation_function 'tanh'"},
           {"eos_token_id", 300000, "eos_token_id 300000 is outside the target vocabulary"}}) {
    json j = nllb();
    j[key] = value;
    if (key == "d_model")
      j["encoder_attention_heads"] = j["decoder_attention_heads"] = 1;
    INFO(key << " = " << value.dump());
    CHECK_THROWS_WITH(parse_m2m100(j), Contains(needle));
  }
  CHECK_THROWS_WITH(parse_m2m100(nllb(), json{{"forced_bos_token_id", 300000}}),
                    Contains("forced_bos_token_id 300000 is outside the target vocabulary"));
}

TEST_CASE("an FSMT config (fairseq's transformer) maps onto post-norm layers", "[fsmt][config]") {
  const json j = json::parse(R"({
    "model_type": "fsmt", "d_model": 512, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
    "encoder_layers": 6, "decoder_layers": 6, "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048,
    "src_vocab_size": 42024, "tgt_vocab_size": 42024, "langs": ["en", "de"], "bad_words_ids": [[1]],
    "forced_eos_token_id": 2})");
  const auto c = halformer::parse_fsmt_config(j, "config.json", json::object(), "generation_config.json", nullptr);
  CHECK(c.format == "fsmt");
  CHECK((!c.norm_first && !c.final_norm && !c.shared_embeddings && !c.tied_output && c.scale_embedding));
  CHECK((c.frequencies == halformer::position_frequencies::fairseq && c.first_position == 2));
  CHECK((c.bos_id == 2 && c.eos_id == 2 && c.pad_id == 1 && c.forced_eos && c.banned_ids == std::vector<int>{1}));
  json no_vocab = j;
  no_vocab.erase("tgt_vocab_size");
  CHECK_THROWS_WITH(halformer::parse_fsmt_config(no_vocab, "config.json", json::object(), "g", nullptr),
                    Contains("tgt_vocab_size"));
}
