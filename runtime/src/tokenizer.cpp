#include "halformer/tokenizer.hpp"

#include "config_json.hpp"
#include "halformer/error.hpp"

#include <sentencepiece_processor.h>

#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <unordered_map>

namespace halformer {

using namespace config_json;

bool valid_utf8(const std::string& text, std::size_t* where) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = s[i];
    // Sequence length and the smallest code point it may encode (no overlongs).
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + std::size_t(len) <= n;
    unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
    for (int k = 1; ok && k < len; ++k) {
      ok = (s[i + std::size_t(k)] >> 6) == 2;
      cp = (cp << 6) | (s[i + std::size_t(k)] & 0x3f);
    }
    static const unsigned smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= smallest[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    if (!ok) {
      if (where)
        *where = i;
      return false;
    }
    i += std::size_t(len);
  }
  return true;
}

namespace {
// The code point at text[i] (valid UTF-8) and its length.
std::pair<unsigned, int> code_point(const std::string& text, std::size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned c = s[i];
  const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
  unsigned cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
  for (int k = 1; k < len && i + std::size_t(k) < text.size(); ++k)
    cp = (cp << 6) | (s[i + std::size_t(k)] & 0x3f);
  return {cp, len};
}

// Python's str.isspace().
bool python_space(unsigned cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

// Python's str.strip() of valid UTF-8.
std::string python_strip(const std::string& text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end) {
    const auto [cp, len] = code_point(text, begin);
    if (!python_space(cp))
      break;
    begin += std::size_t(len);
  }
  while (end > begin) {
    std::size_t start = end - 1; // the last code point's first byte
    while (start > begin && (static_cast<unsigned char>(text[start]) >> 6) == 2)
      --start;
    if (!python_space(code_point(text, start).first))
      break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

// transformers' clean_up_tokenization: spaces before punctuation and English
// contractions, in its order.
std::string clean_up(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{" .", "."},
                                                                                 {" ?", "?"},
                                                                                 {" !", "!"},
                                                                                 {" ,", ","},
                                                                                 {" ' ", "'"},
                                                                                 {" n't", "n't"},
                                                                                 {" 'm", "'m"},
                                                                                 {" 's", "'s"},
                                                                                 {" 've", "'ve"},
                                                                                 {" 're", "'re"}})
    replace_all(s, from, to);
  return s;
}

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

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path) {
  auto p = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = p->Load(path);
  if (!status.ok())
    throw error("cannot load SentencePiece model '" + path + "': " + status.ToString());
  return p;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }
} // namespace

struct Tokenizer::impl {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> source, target;
  std::unordered_map<std::string, int> encoder;        // source pieces
  std::unordered_map<std::string, int> target_encoder; // target pieces (the source's unless separate_vocabs)
  std::unordered_map<int, std::string> decoder;        // target ids
  std::vector<std::string> specials;                   // eos, unk, pad
  std::vector<int> special_ids;                        // in the source vocabulary, as transformers skips them
  int eos = 0, unk = 0;
  bool clean_up_spaces = true;
  std::regex language_code{">>.+<<"};

  // One side of the tokenizer: MarianTokenizer's input mode (source) or target mode.
  struct side {
    const sentencepiece::SentencePieceProcessor& spm;
    const std::unordered_map<std::string, int>& vocabulary;
  };
  side source_side() const { return {*source, encoder}; }
  side target_side() const { return {*target, target_encoder}; }

  int id_of(const std::unordered_map<std::string, int>& vocabulary, const std::string& piece) const {
    const auto it = vocabulary.find(piece);
    return it == vocabulary.end() ? unk : it->second;
  }
  // MarianTokenizer._tokenize: a leading language code, then SentencePiece.
  void encode_text(const side& on, std::string text, std::vector<int>& ids) const {
    std::smatch code;
    if (std::regex_search(text, code, language_code, std::regex_constants::match_continuous))
      ids.push_back(id_of(on.vocabulary, code.str()));
    text = std::regex_replace(text, language_code, "");
    std::vector<std::string> pieces;
    const auto status = on.spm.Encode(text, &pieces);
    if (!status.ok())
      throw error("SentencePiece cannot encode the text: " + status.ToString());
    for (const auto& p : pieces)
      ids.push_back(id_of(on.vocabulary, p));
  }
  // Special tokens written in the text stay whole (the longest at a position);
  // the text between them is encoded piece by piece. Nothing is appended.
  std::vector<int> encode_line(const side& on, const std::string& text) const {
    std::size_t bad = 0;
    if (!valid_utf8(text, &bad))
      throw error("invalid UTF-8 at byte " + std::to_string(bad));
    std::vector<int> ids;
    std::size_t from = 0;
    while (from < text.size()) {
      std::size_t at = std::string::npos, length = 0;
      int special = -1;
      for (std::size_t k = 0; k < specials.size(); ++k) {
        const std::size_t found = text.find(specials[k], from);
        if (found < at || (found == at && found != std::string::npos && specials[k].size() > length))
          at = found, length = specials[k].size(), special = int(k);
      }
      if (at != from)
        encode_text(on, text.substr(from, at == std::string::npos ? std::string::npos : at - from), ids);
      if (at == std::string::npos)
        break;
      ids.push_back(id_of(on.vocabulary, specials[std::size_t(special)]));
      from = at + length;
    }
    return ids;
  }
  std::vector<std::vector<int>> ids_of_pieces(const side& on, const std::vector<std::vector<std::string>>& rows) const {
    std::vector<std::vector<int>> ids(rows.size());
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (const auto& piece : rows[r])
        ids[r].push_back(id_of(on.vocabulary, piece));
    return ids;
  }
};

Tokenizer::Tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

bool Tokenizer::available(const std::string& dir) {
  return exists(dir + "/source.spm") && exists(dir + "/target.spm") && exists(dir + "/vocab.json");
}

Tokenizer Tokenizer::load(const std::string& dir) {
  for (const char* f : {"source.spm", "target.spm", "vocab.json"})
    if (!exists(dir + "/" + f))
      throw error("tokenizer: '" + dir + "' has no " + f +
                  " (a MarianMT directory has source.spm, target.spm "
                  "and vocab.json)");
  const std::string config_path = dir + "/tokenizer_config.json";
  const json config = exists(config_path) ? parse_object(read_text(config_path), config_path) : json::object();
  auto p = std::make_unique<impl>();
  p->source = load_spm(dir + "/source.spm");
  p->target = load_spm(dir + "/target.spm");
  const std::string model_config_path = dir + "/config.json";
  const json model_config =
      exists(model_config_path) ? parse_object(read_text(model_config_path), model_config_path) : json::object();
  const vocabulary_size source_size = vocabulary_size_of(model_config, "vocab_size", model_config_path,
                                                         {std::numeric_limits<int>::max() + 1LL, "the largest int id"});
  p->encoder = load_vocab(dir + "/vocab.json", source_size);
  const bool separate = get_bool_or(config, "separate_vocabs", config_path, false);
  const auto target_vocab = [&] {
    return load_vocab(dir + "/target_vocab.json",
                      vocabulary_size_of(model_config, "decoder_vocab_size", model_config_path, source_size));
  };
  p->target_encoder = separate ? target_vocab() : p->encoder;
  for (const auto& [piece, id] : p->target_encoder)
    p->decoder.emplace(id, piece);
  p->clean_up_spaces = get_bool_or(config, "clean_up_tokenization_spaces", config_path, true);
  p->specials = {special_token(config, "eos_token", config_path, "</s>"),
                 special_token(config, "unk_token", config_path, "<unk>"),
                 special_token(config, "pad_token", config_path, "<pad>")};
  for (const auto& s : p->specials) {
    if (!p->encoder.count(s))
      throw error(dir + "/vocab.json has no special token '" + s + "'");
    p->special_ids.push_back(p->encoder.at(s));
  }
  p->eos = p->special_ids[0], p->unk = p->special_ids[1];
  return Tokenizer(std::move(p));
}

std::vector<int> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids = impl_->encode_line(impl_->source_side(), text);
  ids.push_back(impl_->eos);
  return ids;
}

std::vector<int> Tokenizer::encode_target_prefix(const std::string& text) const {
  return impl_->encode_line(impl_->target_side(), text);
}

std::vector<std::vector<int>> Tokenizer::ids_of_pieces(const std::vector<std::vector<std::string>>& rows) const {
  return impl_->ids_of_pieces(impl_->source_side(), rows);
}

std::vector<std::vector<int>> Tokenizer::target_ids_of_pieces(const std::vector<std::vector<std::string>>& rows) const {
  return impl_->ids_of_pieces(impl_->target_side(), rows);
}

std::vector<std::string> Tokenizer::pieces_of(const std::vector<int>& ids) const {
  std::vector<std::string> pieces;
  for (const int id : ids) {
    const auto it = impl_->decoder.find(id);
    pieces.push_back(it == impl_->decoder.end() ? impl_->specials[1] : it->second);
  }
  return pieces;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
  const impl& t = *impl_;
  std::vector<std::string> pieces;
  std::string out;
  for (const int id : ids) {
    if (std::find(t.special_ids.begin(), t.special_ids.end(), id) != t.special_ids.end())
      continue;
    const auto it = t.decoder.find(id);
    const std::string& token = it == t.decoder.end() ? t.specials[1] : it->second;
    if (std::find(t.specials.begin(), t.specials.end(), token) != t.specials.end()) {
      out += t.target->DecodePieces(pieces) + token + " "; // special tokens bypass SentencePiece
      pieces.clear();
    } else {
      pieces.push_back(token);
    }
  }
  out += t.target->DecodePieces(pieces);
  replace_all(out, "\u2581", " ");
  out = python_strip(out);
  return t.clean_up_spaces ? clean_up(out) : out;
}

} // namespace halformer
