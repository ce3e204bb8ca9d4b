#include "halformer/config.hpp"

#include "config_json.hpp"
#include "marian_config.hpp"

#include "halformer/error.hpp"
#include "halformer/positions.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

namespace halformer {

using namespace config_json;

model_config model_config::parse(const std::string& text, const std::string& where,
                                 std::vector<std::string>* warnings) {
  const json j = parse_object(text, where);
  model_config c;
  c.d_model = get_int(j, "d_model", where, 1);
  c.nhead = get_int(j, "nhead", where, 1);
  if (c.d_model % c.nhead != 0)
    throw error(where + ": d_model (" + std::to_string(c.d_model) + ") is not a multiple of nhead (" +
                std::to_string(c.nhead) + ")");
  c.num_encoder_layers = get_int(j, "num_encoder_layers", where, 1);
  c.num_decoder_layers = get_int(j, "num_decoder_layers", where, 1);
  c.dim_feedforward = get_int(j, "dim_feedforward", where, 1);
  c.src_vocab = get_int(j, "src_vocab", where, 1);
  c.tgt_vocab = get_int(j, "tgt_vocab", where, 1);
  c.norm_first = get_bool(j, "norm_first", where);
  c.final_norm = get_bool(j, "final_norm", where);
  c.scale_embedding = get_bool(j, "scale_embedding", where);
  c.activation = get_string(j, "activation", where);
  if (c.activation != "relu" && c.activation != "gelu" && c.activation != "silu")
    throw error(where + ": activation '" + c.activation + "' is not relu, gelu or silu");
  if (!j.contains("layer_norm_eps"))
    throw error(where + ": missing required key 'layer_norm_eps'");
  if (!j["layer_norm_eps"].is_number() || !(j["layer_norm_eps"].get<double>() > 0))
    throw error(where + ": key 'layer_norm_eps' must be a positive number, not " + j["layer_norm_eps"].dump());
  c.layer_norm_eps = j["layer_norm_eps"].get<float>();
  c.pad_id = get_int(j, "pad_id", where, 0);
  c.bos_id = get_int(j, "bos_id", where, 0);
  c.eos_id = get_int(j, "eos_id", where, 0);
  for (const char* k : {"bos_id", "eos_id", "pad_id"}) {
    const int id = k == std::string("bos_id") ? c.bos_id : k == std::string("eos_id") ? c.eos_id : c.pad_id;
    if (id >= c.tgt_vocab && std::string(k) != "pad_id")
      throw error(where + ": " + k + " " + std::to_string(id) + " is outside the target vocabulary (" +
                  std::to_string(c.tgt_vocab) + ")");
  }
  if (get_string(j, "positional_encoding", where) != "sinusoidal")
    throw error(where + ": positional_encoding must be \"sinusoidal\"");
  static const std::set<std::string> known{
      "d_model",   "nhead",      "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "src_vocab",
      "tgt_vocab", "norm_first", "final_norm",         "activation",         "layer_norm_eps",  "pad_id",
      "bos_id",    "eos_id",     "scale_embedding",    "positional_encoding"};
  for (const auto& [k, v] : j.items())
    if (!known.count(k) && warnings)
      warnings->push_back(where + ": unknown key '" + k + "' ignored");
  return c;
}

double model_config::frequency_step() const {
  return sinusoid_frequency_step(d_model, frequencies == position_frequencies::fairseq);
}

model_config model_config::load(const std::string& path, std::vector<std::string>* warnings) {
  return parse(read_text(path), path, warnings);
}

model_config model_config::load_dir(const std::string& dir, std::vector<std::string>* warnings) {
  const std::string path = dir + "/config.json";
  const std::string text = read_text(path);
  const json j = parse_object(text, path);
  if (!j.contains("model_type"))
    return parse(text, path, warnings); // halformer's own format
  const std::string type = get_string(j, "model_type", path);
  if (type != "marian" && type != "m2m_100" && type != "fsmt")
    throw error(path + ": model_type '" + type +
                "' is not supported (supported: marian, m2m_100 (M2M100, NLLB), fsmt (fairseq's transformer), or "
                "halformer's own format without a model_type; docs/model-format.md)");
  const std::string generation = dir + "/generation_config.json";
  const json rules =
      std::ifstream(generation).good() ? parse_object(read_text(generation), generation) : json::object();
  const auto parse_family = type == "marian"    ? parse_marian_config
                            : type == "m2m_100" ? parse_m2m100_config
                                                : parse_fsmt_config;
  return parse_family(j, path, rules, generation, warnings);
}

} // namespace halformer
