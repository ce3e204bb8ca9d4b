#include "halformer/tokenizer.hpp"

#include "tokenizer_impl.hpp"

#include <algorithm>

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

} // namespace

// MarianTokenizer._tokenize: a leading language code (Marian's only), then SentencePiece.
void Tokenizer::impl::encode_text(const side& on, std::string text, std::vector<int>& ids) const {
  if (kind == family::marian) {
    std::smatch code;
    if (std::regex_search(text, code, language_code, std::regex_constants::match_continuous))
      ids.push_back(id_of(on.vocabulary, code.str()));
    text = std::regex_replace(text, language_code, "");
  }
  std::vector<std::string> pieces;
  const auto status = on.spm.Encode(text, &pieces);
  if (!status.ok())
    throw error("SentencePiece cannot encode the text: " + status.ToString());
  for (const auto& p : pieces)
    ids.push_back(id_of(on.vocabulary, p));
}

// Special tokens written in the text stay whole (the longest at a position);
// the text between them is encoded piece by piece. Nothing is appended.
std::vector<int> Tokenizer::impl::encode_line(const side& on, const std::string& text) const {
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

std::vector<std::vector<int>> Tokenizer::impl::ids_of_pieces(const side& on,
                                                             const std::vector<std::vector<std::string>>& rows) const {
  std::vector<std::vector<int>> ids(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (const auto& piece : rows[r])
      ids[r].push_back(id_of(on.vocabulary, piece));
  return ids;
}

int Tokenizer::impl::language_id(const std::string& code) const {
  if (kind == family::marian)
    throw error("a MarianMT tokenizer has no language codes to choose ('" + code +
                "'): a multilingual Marian model takes its target code (>>fr<<) in the source text");
  const std::string token = kind == family::m2m100 && code.rfind("__", 0) != 0 ? "__" + code + "__" : code;
  const auto it = languages.find(token);
  if (it != languages.end())
    return it->second;
  std::vector<std::string> known;
  for (const auto& [name, id] : languages)
    known.push_back(name);
  std::sort(known.begin(), known.end());
  std::string some;
  for (std::size_t i = 0; i < known.size() && i < 8; ++i)
    some += (i ? ", " : "") + known[i];
  throw error("unknown language code '" + code + "' (this tokenizer has " + std::to_string(known.size()) + ": " + some +
              (known.size() > 8 ? ", ..." : "") + ")");
}

Tokenizer::Tokenizer(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

bool Tokenizer::available(const std::string& dir) {
  impl::family kind;
  return impl::family_of(dir, kind);
}

Tokenizer Tokenizer::load(const std::string& dir) {
  auto p = std::make_unique<impl>();
  impl::family_of(dir, p->kind);
  if (p->kind == impl::family::marian)
    p->load_marian(dir);
  else
    p->load_multilingual(dir);
  return Tokenizer(std::move(p));
}

bool Tokenizer::multilingual() const { return impl_->kind != impl::family::marian; }

int Tokenizer::language_id(const std::string& code) const { return impl_->language_id(code); }

int Tokenizer::forced_bos_id(const std::string& target_lang, int model_forced_bos) const {
  if (!target_lang.empty())
    return language_id(target_lang);
  if (multilingual() && model_forced_bos < 0)
    throw error("target_lang is required: this model (NLLB or M2M100) is told the target language by its code, "
                "e.g. target_lang 'fra_Latn' (NLLB) or 'fr' (M2M100)");
  return -1;
}

std::vector<int> Tokenizer::encode(const std::string& text, const std::string& source_lang) const {
  const impl& t = *impl_;
  std::vector<int> ids;
  if (t.kind != impl::family::marian) { // NLLB and M2M100: [source_lang] pieces </s>
    const std::string& lang = source_lang.empty() ? t.source_language : source_lang;
    if (lang.empty())
      throw error("source_lang is required: this tokenizer's tokenizer_config.json names no src_lang");
    ids.push_back(t.language_id(lang));
  } else if (!source_lang.empty()) {
    t.language_id(source_lang); // Marian's error naming the code
  }
  const std::vector<int> pieces = t.encode_line(t.source_side(), text);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  ids.push_back(t.eos);
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
