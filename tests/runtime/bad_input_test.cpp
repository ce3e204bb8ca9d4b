// Bad input gives a clear error naming the problem: model directories with a
// missing, mis-shaped or wrongly typed tensor, truncated or corrupt safetensors,
// bad config.json; token ids out of range, empty sentences, over-long sources.
#include "fixtures.hpp"

#include "halformer/config.hpp"
#include "safetensors.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;
using Catch::Contains;
using halformer::Model;

namespace {
const std::string good = fixtures::dir("post_ln_relu");

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_file(const std::string& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

// A copy of the good model directory with the given file contents replaced.
struct model_copy {
  std::string path;
  explicit model_copy(const std::string& tag) {
    path = (fs::temp_directory_path() / ("halformer_bad_" + tag + "_" + std::to_string(::getpid()))).string();
    fs::remove_all(path);
    fs::create_directories(path);
    fs::copy_file(good + "/config.json", path + "/config.json");
    fs::copy_file(good + "/model.safetensors", path + "/model.safetensors");
  }
  ~model_copy() { fs::remove_all(path); }
};

// Rewrites the safetensors header through `edit` (data section kept).
std::string edit_header(const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(file[i]);
  auto header = nlohmann::json::parse(file.substr(8, n));
  edit(header);
  std::string text = header.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = char((text.size() >> (8 * i)) & 0xff);
  return out + text + file.substr(8 + n);
}
} // namespace

TEST_CASE("missing and mis-shaped tensors are named", "[bad_input]") {
  const std::string file = read_file(good + "/model.safetensors");
  {
    model_copy m("missing");
    write_file(m.path + "/model.safetensors",
               edit_header(file, [](auto& h) { h.erase("transformer.encoder.layers.1.linear2.weight"); }));
    CHECK_THROWS_WITH(Model::load(m.path), Contains("missing tensor 'transformer.encoder.layers.1.linear2.weight'"));
  }
  {
    model_copy m("shape");
    write_file(m.path + "/model.safetensors", edit_header(file, [](auto& h) {
                 // Same byte count, wrong shape: [24, 40] instead of [40, 24].
                 h["transformer.encoder.layers.0.linear1.weight"]["shape"] = {24, 40};
               }));
    CHECK_THROWS_WITH(Model::load(m.path), Contains("'transformer.encoder.layers.0.linear1.weight' has shape [24, 40], "
                                                    "expected [40, 24]"));
  }
  {
    model_copy m("dtype");
    write_file(m.path + "/model.safetensors", edit_header(file, [](auto& h) {
                 auto& t = h["generator.bias"];
                 t["dtype"] = "I32";
               }));
    CHECK_THROWS_WITH(Model::load(m.path), Contains("'generator.bias' has dtype I32"));
  }
}

TEST_CASE("truncated and corrupt safetensors files are errors, never crashes", "[bad_input]") {
  const std::string file = read_file(good + "/model.safetensors");
  model_copy m("truncated");
  for (std::size_t keep :
       {std::size_t(0), std::size_t(5), std::size_t(8), std::size_t(100), file.size() / 2, file.size() - 1}) {
    INFO("kept " << keep << " of " << file.size() << " bytes");
    write_file(m.path + "/model.safetensors", file.substr(0, keep));
    CHECK_THROWS_AS(Model::load(m.path), halformer::error);
  }
  std::string corrupt = file;
  corrupt[20] = '\x01';
  write_file(m.path + "/model.safetensors", corrupt);
  CHECK_THROWS_WITH(Model::load(m.path), Contains("invalid JSON header"));
  write_file(m.path + "/model.safetensors", edit_header(file, [](auto& h) {
               h["generator.bias"]["data_offsets"] = {0, 1ull << 40};
             }));
  CHECK_THROWS_WITH(Model::load(m.path), Contains("'generator.bias': data_offsets"));
  write_file(m.path + "/model.safetensors", edit_header(file, [](auto& h) { h["generator.bias"]["shape"] = {-3}; }));
  CHECK_THROWS_WITH(Model::load(m.path), Contains("negative"));
  fs::remove(m.path + "/model.safetensors");
  CHECK_THROWS_WITH(Model::load(m.path), Contains("cannot open"));
}

TEST_CASE("bad config.json values name the key", "[bad_input][config]") {
  const auto base = nlohmann::json::parse(read_file(good + "/config.json"));
  struct change {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const std::vector<change> changes{
      {[](auto& j) { j.erase("nhead"); }, "missing required key 'nhead'"},
      {[](auto& j) { j["d_model"] = "24"; }, "'d_model' must be an integer"},
      {[](auto& j) { j["nhead"] = 5; }, "d_model (24) is not a multiple of nhead (5)"},
      {[](auto& j) { j["activation"] = "swish"; }, "activation 'swish'"},
      {[](auto& j) { j["norm_first"] = 1; }, "'norm_first' must be true or false"},
      {[](auto& j) { j["eos_id"] = 99; }, "eos_id 99 is outside the target vocabulary"},
      {[](auto& j) { j["layer_norm_eps"] = -1; }, "'layer_norm_eps' must be a positive number"},
      {[](auto& j) { j["num_decoder_layers"] = 0; }, "'num_decoder_layers' = 0 is out of range"},
      {[](auto& j) { j["positional_encoding"] = "learned"; }, "positional_encoding must be"},
  };
  for (const auto& c : changes) {
    auto j = base;
    c.edit(j);
    INFO(j.dump());
    CHECK_THROWS_WITH(halformer::model_config::parse(j.dump(), "config.json", nullptr), Contains(c.message));
  }
  CHECK_THROWS_WITH(halformer::model_config::parse("{\"d_model\": 24,", "config.json", nullptr),
                    Contains("not valid JSON"));
  auto j = base;
  j["comment"] = "hello";
  std::vector<std::string> warnings;
  halformer::model_config::parse(j.dump(), "config.json", &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("unknown key 'comment'"));
}

TEST_CASE("bad token input names the sentence, position and id", "[bad_input][tokens]") {
  halformer::load_options lo;
  lo.max_source_length = 50;
  Model m = Model::load(good, lo);
  CHECK_THROWS_WITH(m.translate({{3, 4}, {5, 23, 6}}), Contains("source 1, position 1: token id 23 is outside"));
  CHECK_THROWS_WITH(m.translate({{3, -1}}), Contains("token id -1"));
  CHECK_THROWS_WITH(m.translate({{3}, {}}), Contains("source 1 is empty"));
  CHECK_THROWS_WITH(m.translate({std::vector<int>(51, 3)}), Contains("more than the maximum 50"));
  halformer::decode_options o;
  o.beam = 2, o.nbest = 3;
  CHECK_THROWS_WITH(m.translate({{3}}, o), Contains("nbest must be in [1, beam = 2]"));
  o.nbest = 1, o.max_len = 5000;
  CHECK_THROWS_WITH(m.translate({{3}}, o), Contains("max_len must be in [1, 1024], not 5000"));
  std::vector<float> logits;
  CHECK_THROWS_WITH(m.forward({{3, 4}}, {{1, 29}}, logits), Contains("target 0, position 1: token id 29"));
  CHECK_THROWS_WITH(m.forward({{3, 0, 4}}, {{1}}, logits), Contains("pad_id at position 1 before real tokens"));
  CHECK_THROWS_WITH(m.forward({{3, 4}, {3}}, {{1}, {1}}, logits), Contains("row 1 is not as long as row 0"));
  m.begin({{3, 4}});
  CHECK_THROWS_WITH(m.decode_step({1, 1}), Contains("2 tokens for 1 sentences"));
}

TEST_CASE("a thread count outside 0..256 is an error naming it", "[bad_input][threads]") {
  halformer::load_options lo;
  lo.threads = 300;
  CHECK_THROWS_WITH(Model::load(good, lo), Contains("threads must be at most 256, not 300"));
  lo.threads = -1;
  CHECK_THROWS_WITH(Model::load(good, lo), Contains("threads must be >= 0"));
}
