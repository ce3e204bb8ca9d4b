#include "tokenizer_impl.hpp"

#include <algorithm>
#include <fstream>
#include <limits>

namespace halformer {

using namespace config_json;

namespace {
// A special token of tokenizer_config.json: a string or an AddedToken object.
std::string special_token(const json& config, const std::string& key, const std::string& where,
                          const std::string& otherwise) {
  if (!config.contains(key) || config[key].is_null())
    return otherwise;
  const json& v = config[key];
  if (v.is_object())
    return get_string(v, "content", where + " " + key);
  return get_string(config, key, where);
}

// A vocabulary's size: `key` of the directory's config.json (MarianMT's
// vocab_size, decoder_vocab_size), or `otherwise` where it has none.
struct vocabulary_size {
  long long ids;
  std::string what;
};
vocabulary_size vocabulary_size_of(const json& config, const std::string& key, const std::string& where,
                                   const vocabulary_size& otherwise) {
  const int ids = get_int_or(config, key, where, 1, 0);
  return ids == 0 ? otherwise : vocabulary_size{ids, where + " " + key + " " + std::to_string(ids)};
}

// vocab.json: every id an integer within the vocabulary, checked here (an id
// past an int would wrap and surface at translate time as another token).
// JSON's non-negative integers parse as unsigned.
std::unordered_map<std::string, int> load_vocab(const std::string& path, const vocabulary_size& size) {
  const json j = parse_object(read_text(path), path);
  std::unordered_map<std::string, int> vocab;
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_unsigned())
      throw error(path + ": the id of '" + piece + "' must be a non-negative integer, not " + id.dump());
    if (id.get<unsigned long long>() >= static_cast<unsigned long long>(size.ids))
      throw error(path + ": the id of '" + piece + "', " + id.dump() + ", is outside the vocabulary (" + size.what +
                  ")");
    vocab.emplace(piece, id.get<int>());
  }
  return vocab;
}

std::shared_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path) {
  auto p = std::make_shared<sentencepiece::SentencePieceProcessor>();
  const auto status = p->Load(path);
  if (!status.ok())
    throw error("cannot load SentencePiece model '" + path + "': " + status.ToString());
  return p;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

json object_or_empty(const std::string& path) {
  return exists(path) ? parse_object(read_text(path), path) : json::object();
}

// The added tokens: tokenizer_config.json's added_tokens_decoder ({"id": {"content",
// "special"}}, written by transformers >= 4.34), else tokenizer.json's added_tokens
// (the fast tokenizer's file: `fast`, read only then), else tokenizer_config.json's
// (or special_tokens_map.json's) additional_special_tokens numbered from `next_id`
// in fairseq's order (the codes, then <mask>: eng_Latn 256047 in NLLB-200's
// vocabulary). Each id is checked against the vocabulary.
std::vector<std::pair<std::string, int>> added_tokens(const json& config, const json& map, const std::string& fast,
                                                      const std::string& where, int next_id,
                                                      const vocabulary_size& size) {
  std::vector<std::pair<std::string, int>> tokens;
  const auto check = [&](const std::string& token, long long id) {
    if (id < 0 || id >= size.ids)
      throw error(where + ": the id of added token '" + token + "', " + std::to_string(id) +
                  ", is outside the vocabulary (" + size.what + ")");
    tokens.emplace_back(token, int(id));
  };
  if (config.contains("added_tokens_decoder") && config["added_tokens_decoder"].is_object()) {
    for (const auto& [key, token] : config["added_tokens_decoder"].items()) {
      char* end = nullptr;
      const long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0')
        throw error(where + ": added_tokens_decoder key '" + key + "' is not an id");
      if (get_bool_or(token, "special", where, true))
        check(get_string(token, "content", where + " added_tokens_decoder " + key), id);
    }
    return tokens;
  }
  if (exists(fast)) {
    const json tokenizer = parse_object(read_text(fast), fast);
    if (tokenizer.contains("added_tokens") && tokenizer["added_tokens"].is_array()) {
      for (const json& token : tokenizer["added_tokens"])
        if (token.is_object() && get_bool_or(token, "special", fast, true))
          check(get_string(token, "content", fast + " added_tokens"), get_int(token, "id", fast + " added_tokens", 0));
      return tokens;
    }
  }
  const json& listed = config.contains("additional_special_tokens") ? config : map;
  if (listed.contains("additional_special_tokens") && listed["additional_special_tokens"].is_array())
    for (const json& t : listed["additional_special_tokens"]) {
      if (!t.is_string() && !t.is_object())
        throw error(where + ": additional_special_tokens holds " + t.dump() + ", not a token");
      check(t.is_object() ? get_string(t, "content", where) : t.get<std::string>(), next_id++);
    }
  return tokens;
}

// The language codes among the added tokens, in the order the files list them.
bool is_language(bool m2m100, const std::string& token) {
  if (m2m100)
    return token.size() > 4 && token.rfind("__", 0) == 0 && token.compare(token.size() - 2, 2, "__") == 0;
  return token != "<s>" && token != "<pad>" && token != "</s>" && token != "<unk>" && token != "<mask>";
}
} // namespace

bool Tokenizer::impl::family_of(const std::string& dir, family& kind) {
  const std::string path = dir + "/tokenizer_config.json";
  const json config = object_or_empty(path);
  const std::string name = config.contains("tokenizer_class") && config["tokenizer_class"].is_string()
                               ? config["tokenizer_class"].get<std::string>()
                               : "";
  if (name == "NllbTokenizer" || name == "NllbTokenizerFast" || name == "M2M100Tokenizer") {
    kind = name == "M2M100Tokenizer" ? family::m2m100 : family::nllb;
    return true;
  }
  kind = family::marian;
  return exists(dir + "/source.spm") && exists(dir + "/target.spm") && exists(dir + "/vocab.json");
}

void Tokenizer::impl::load_marian(const std::string& dir) {
  for (const char* f : {"source.spm", "target.spm", "vocab.json"})
    if (!exists(dir + "/" + f))
      throw error("tokenizer: '" + dir + "' has no " + f +
                  " (a MarianMT directory has source.spm, target.spm and vocab.json; NLLB and M2M100 ones "
                  "a tokenizer_config.json naming their tokenizer_class)");
  const std::string config_path = dir + "/tokenizer_config.json";
  const json config = object_or_empty(config_path);
  source = load_spm(dir + "/source.spm");
  target = load_spm(dir + "/target.spm");
  const std::string model_config_path = dir + "/config.json";
  const json model_config = object_or_empty(model_config_path);
  const vocabulary_size source_size = vocabulary_size_of(model_config, "vocab_size", model_config_path,
                                                         {std::numeric_limits<int>::max() + 1LL, "the largest int id"});
  encoder = load_vocab(dir + "/vocab.json", source_size);
  const bool separate = get_bool_or(config, "separate_vocabs", config_path, false);
  const auto target_vocab = [&] {
    return load_vocab(dir + "/target_vocab.json",
                      vocabulary_size_of(model_config, "decoder_vocab_size", model_config_path, source_size));
  };
  target_encoder = separate ? target_vocab() : encoder;
  for (const auto& [piece, id] : target_encoder)
    decoder.emplace(id, piece);
  clean_up_spaces = get_bool_or(config, "clean_up_tokenization_spaces", config_path, true);
  specials = {special_token(config, "eos_token", config_path, "</s>"),
              special_token(config, "unk_token", config_path, "<unk>"),
              special_token(config, "pad_token", config_path, "<pad>")};
  for (const auto& s : specials) {
    if (!encoder.count(s))
      throw error(dir + "/vocab.json has no special token '" + s + "'");
    special_ids.push_back(encoder.at(s));
  }
  eos = special_ids[0], unk = special_ids[1];
}

// NllbTokenizer: sentencepiece.bpe.model's pieces at their id + 1 after <s> <pad>
// </s> <unk>, then the language codes and <mask>. M2M100Tokenizer: vocab.json's
// ids (SentencePiece only splits), then the language codes.
void Tokenizer::impl::load_multilingual(const std::string& dir) {
  const std::string config_path = dir + "/tokenizer_config.json", model_path = dir + "/sentencepiece.bpe.model";
  const json config = object_or_empty(config_path), map = object_or_empty(dir + "/special_tokens_map.json");
  if (!exists(model_path))
    throw error("tokenizer: '" + dir + "' has no sentencepiece.bpe.model");
  source = target = load_spm(model_path);
  const std::string model_config_path = dir + "/config.json";
  const vocabulary_size size = vocabulary_size_of(object_or_empty(model_config_path), "vocab_size", model_config_path,
                                                  {std::numeric_limits<int>::max() + 1LL, "the largest int id"});
  int next_id = 0;
  if (kind == family::nllb) {
    encoder = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
    for (int i = 0; i < source->GetPieceSize(); ++i)
      if (!source->IsControl(i) && !source->IsUnknown(i))
        encoder.emplace(source->IdToPiece(i), i + 1);
    next_id = source->GetPieceSize() + 1;
  } else {
    if (!exists(dir + "/vocab.json"))
      throw error("tokenizer: '" + dir + "' has no vocab.json (M2M100Tokenizer's)");
    encoder = load_vocab(dir + "/vocab.json", size);
    next_id = int(encoder.size());
  }
  const auto added = added_tokens(config, map, dir + "/tokenizer.json", config_path, next_id, size);
  specials = {
      special_token(config, "eos_token", config_path, "</s>"), special_token(config, "unk_token", config_path, "<unk>"),
      special_token(config, "pad_token", config_path, "<pad>"), special_token(config, "bos_token", config_path, "<s>")};
  const std::string mask = special_token(config, "mask_token", config_path, "<mask>");
  if (kind == family::nllb &&
      std::none_of(added.begin(), added.end(), [&](const auto& t) { return t.first == mask; })) {
    encoder.emplace(mask, next_id + int(added.size())); // fairseq's: after the language codes
    specials.push_back(mask);
  }
  for (const auto& [token, id] : added) {
    encoder[token] = id;
    specials.push_back(token);
    if (is_language(kind == family::m2m100, token))
      languages.emplace(token, id);
  }
  for (const auto& s : specials) {
    if (!encoder.count(s))
      throw error(dir + ": the tokenizer has no special token '" + s + "'");
    special_ids.push_back(encoder.at(s));
  }
  if (languages.empty())
    throw error(config_path + ": no language codes (added_tokens_decoder or additional_special_tokens)");
  target_encoder = encoder;
  for (const auto& [piece, id] : encoder)
    decoder.emplace(id, piece);
  eos = special_ids[0], unk = special_ids[1];
  clean_up_spaces = get_bool_or(config, "clean_up_tokenization_spaces", config_path, true);
  if (config.contains("src_lang") && config["src_lang"].is_string())
    source_language = config["src_lang"].get<std::string>();
}

} // namespace halformer
