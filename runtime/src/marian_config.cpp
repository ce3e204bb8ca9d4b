#include "marian_config.hpp"

#include "config_json.hpp"
#include "halformer/error.hpp"

namespace halformer {

using namespace config_json;

namespace {
// transformers' ACT2FN names -> the FFN kernels' activations.
std::string activation_of(const std::string& name, const std::string& where) {
  if (name == "relu" || name == "gelu")
    return name; // "gelu" is the exact erf form in transformers
  if (name == "swish" || name == "silu")
    return "silu";
  throw error(where + ": activation_function '" + name + "' is not supported (relu, gelu, swish/silu)");
}

// An int that transformers also accepts as a one-element list (eos_token_id).
int single_id(const json& j, const std::string& key, const std::string& where, int otherwise) {
  if (j.contains(key) && j[key].is_array()) {
    if (j[key].size() != 1)
      throw error(where + ": key '" + key + "' lists " + std::to_string(j[key].size()) +
                  " ids; halformer decodes with one end token");
    return get_int(json{{key, j[key][0]}}, key, where, 0);
  }
  return get_int_or(j, key, where, 0, otherwise);
}

// bad_words_ids: [[id], ...]; only single tokens can be banned.
std::vector<int> banned_of(const json& j, const std::string& where) {
  std::vector<int> ids;
  if (!j.contains("bad_words_ids") || j["bad_words_ids"].is_null())
    return ids;
  const json& list = j["bad_words_ids"];
  if (!list.is_array())
    throw error(where + ": bad_words_ids must be a list of token-id lists, not " + list.dump());
  for (const json& words : list) {
    if (!words.is_array() || words.size() != 1 || !words[0].is_number_integer() || words[0].get<long long>() < 0)
      throw error(where + ": bad_words_ids entry " + words.dump() +
                  " is not supported (only single tokens [id] can be banned)");
    ids.push_back(words[0].get<int>());
  }
  return ids;
}

// The decoding rules (start, end, banned and forced tokens; `start` where the
// rules name none) from `rules`: the
// generation config when the directory has one, else config.json (as transformers'
// generate() takes them).
void decoding_rules(model_config& c, const json& rules, const std::string& where, int vocab_size, int start) {
  c.bos_id = get_int_or(rules, "decoder_start_token_id", where, 0, start);
  c.eos_id = single_id(rules, "eos_token_id", where, c.eos_id);
  c.banned_ids = banned_of(rules, where);
  const json forced = rules.contains("forced_eos_token_id") ? rules["forced_eos_token_id"] : json();
  c.forced_eos = !forced.is_null();
  if (c.forced_eos && get_int(rules, "forced_eos_token_id", where, 0) != c.eos_id)
    throw error(where + ": forced_eos_token_id " + forced.dump() + " differs from eos_token_id " +
                std::to_string(c.eos_id) + " (not supported)");
  if (rules.contains("forced_bos_token_id") && !rules["forced_bos_token_id"].is_null())
    c.forced_bos_id = get_int(rules, "forced_bos_token_id", where, 0);
  for (const int id : c.banned_ids)
    if (id >= vocab_size)
      throw error(where + ": bad_words_ids token " + std::to_string(id) + " is outside the target vocabulary (" +
                  std::to_string(vocab_size) + ")");
}

// A family's defaults for the keys MarianConfig and M2M100Config share.
struct bart_defaults {
  const char* format;
  int eos;
  const char* activation;
  bool scale_embedding;
  int pad;
};

// What MarianConfig and M2M100Config share (BART's keys): the layers' sizes, the
// activation, embeddings and the special ids.
model_config bart_layers(const json& j, const std::string& where, const bart_defaults& d) {
  model_config c;
  c.format = d.format;
  c.beam = model_config::beam_rules::transformers;
  c.eos_id = d.eos;
  c.d_model = get_int_or(j, "d_model", where, 1, 1024);
  c.nhead = get_int_or(j, "encoder_attention_heads", where, 1, 16);
  if (get_int_or(j, "decoder_attention_heads", where, 1, 16) != c.nhead)
    throw error(where +
                ": encoder_attention_heads and decoder_attention_heads differ (halformer needs one head count)");
  if (c.d_model % c.nhead != 0)
    throw error(where + ": d_model (" + std::to_string(c.d_model) + ") is not a multiple of encoder_attention_heads (" +
                std::to_string(c.nhead) + ")");
  c.num_encoder_layers = get_int_or(j, "encoder_layers", where, 1, 12);
  c.num_decoder_layers = get_int_or(j, "decoder_layers", where, 1, 12);
  c.dim_feedforward = get_int_or(j, "encoder_ffn_dim", where, 1, 4096);
  if (get_int_or(j, "decoder_ffn_dim", where, 1, 4096) != c.dim_feedforward)
    throw error(where + ": encoder_ffn_dim and decoder_ffn_dim differ (halformer needs one FFN width)");
  c.tied_output = get_bool_or(j, "tie_word_embeddings", where, true);
  c.activation = activation_of(get_string_or(j, "activation_function", where, d.activation), where);
  c.scale_embedding = get_bool_or(j, "scale_embedding", where, d.scale_embedding);
  c.max_positions = get_int_or(j, "max_position_embeddings", where, 1, 1024);
  c.positions = position_layout::split;
  c.layer_norm_eps = 1e-5f; // nn.LayerNorm's default, as both models'
  c.pad_id = get_int_or(j, "pad_token_id", where, 0, d.pad);
  c.eos_id = single_id(j, "eos_token_id", where, c.eos_id);
  return c;
}

// The decoding rules, from generation_config.json where the directory has one
// (`generation` not empty), and the start, end and pad ids within the target vocabulary.
void rules_and_ids(model_config& c, const json& j, const std::string& where, const json& generation,
                   const std::string& generation_where, int start) {
  const bool own_rules = !generation.empty();
  decoding_rules(c, own_rules ? generation : j, own_rules ? generation_where : where, c.tgt_vocab, start);
  for (const auto& [name, id] :
       {std::pair{"decoder_start_token_id", c.bos_id}, {"eos_token_id", c.eos_id}, {"pad_token_id", c.pad_id}})
    if (id >= c.tgt_vocab)
      throw error(where + ": " + name + " " + std::to_string(id) + " is outside the target vocabulary (" +
                  std::to_string(c.tgt_vocab) + ")");
  if (c.forced_bos_id >= c.tgt_vocab)
    throw error(where + ": forced_bos_token_id " + std::to_string(c.forced_bos_id) +
                " is outside the target vocabulary (" + std::to_string(c.tgt_vocab) + ")");
}
// fairseq's sinusoids (M2M100, FSMT): its frequencies, positions from pad + 1.
void fairseq_positions(model_config& c, const std::string& where) {
  if (c.d_model < 4 || c.d_model % 2 != 0) // the frequencies divide by d_model / 2 - 1
    throw error(where + ": d_model " + std::to_string(c.d_model) + " must be even and at least 4 (" + c.format + ")");
  c.frequencies = position_frequencies::fairseq;
  c.first_position = c.pad_id + 1;
}
} // namespace

model_config parse_marian_config(const json& j, const std::string& where, const json& generation,
                                 const std::string& generation_where, std::vector<std::string>* warnings) {
  model_config c = bart_layers(j, where, {"marian", 0, "gelu", false, 58100}); // MarianConfig's defaults
  const int vocab = get_int_or(j, "vocab_size", where, 1, 58101);
  c.shared_embeddings = get_bool_or(j, "share_encoder_decoder_embeddings", where, true);
  c.src_vocab = vocab;
  c.tgt_vocab = c.shared_embeddings ? vocab : get_int_or(j, "decoder_vocab_size", where, 1, vocab);
  // transformers' Marian is post-norm without final norms; a pre-norm export says so.
  c.norm_first = c.final_norm = get_bool_or(j, "normalize_before", where, false);
  if (c.norm_first && warnings)
    warnings->push_back(where + ": normalize_before is true: pre-norm layers and final norms "
                                "(model.encoder.layer_norm); transformers' MarianMTModel ignores this key");
  rules_and_ids(c, j, where, generation, generation_where, c.pad_id);
  return c;
}

model_config parse_m2m100_config(const json& j, const std::string& where, const json& generation,
                                 const std::string& generation_where, std::vector<std::string>* warnings) {
  model_config c = bart_layers(j, where, {"m2m_100", 2, "relu", true, 1}); // M2M100Config's defaults
  fairseq_positions(c, where);
  c.src_vocab = c.tgt_vocab = get_int_or(j, "vocab_size", where, 1, 128112);
  c.shared_embeddings = true; // M2M100Model embeds both sides with model.shared
  c.norm_first = c.final_norm = true;
  (void)warnings; // nothing M2M100Config has is ignored
  rules_and_ids(c, j, where, generation, generation_where, 2);
  return c;
}

model_config parse_fsmt_config(const json& j, const std::string& where, const json& generation,
                               const std::string& generation_where, std::vector<std::string>* warnings) {
  model_config c = bart_layers(j, where, {"fsmt", 2, "relu", true, 1}); // FSMTConfig's defaults
  fairseq_positions(c, where);
  c.src_vocab = get_int(j, "src_vocab_size", where, 1);
  c.tgt_vocab = get_int(j, "tgt_vocab_size", where, 1);
  c.tied_output = get_bool_or(j, "tie_word_embeddings", where, false);
  c.norm_first = c.final_norm = false; // fairseq's transformer: post-norm, no final norms
  (void)warnings;
  rules_and_ids(c, j, where, generation, generation_where, 2);
  return c;
}

} // namespace halformer
