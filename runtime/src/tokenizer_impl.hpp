// The tokenizer's state and its three families' files (tokenizer_files.cpp):
// MarianTokenizer's, NllbTokenizer's and M2M100Tokenizer's, as transformers 4.40
// reads them.
#pragma once

#include "config_json.hpp"
#include "halformer/error.hpp"
#include "halformer/tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <memory>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

namespace halformer {

struct Tokenizer::impl {
  // marian: a leading ">>xx<<" in the text; nllb, m2m100: a language code token
  // before the source (source_lang) and forced first in the target (target_lang).
  enum class family { marian, nllb, m2m100 } kind = family::marian;
  std::shared_ptr<sentencepiece::SentencePieceProcessor> source, target;
  std::unordered_map<std::string, int> encoder;        // source pieces
  std::unordered_map<std::string, int> target_encoder; // target pieces (the source's unless separate_vocabs)
  std::unordered_map<int, std::string> decoder;        // target ids
  std::vector<std::string> specials;                   // kept whole in text: eos, unk, pad first
  std::vector<int> special_ids;                        // dropped by decode, as transformers skips them
  std::unordered_map<std::string, int> languages;      // code token ("fra_Latn", "__fr__") -> id
  std::string source_language;                         // tokenizer_config.json's src_lang ("" if none)
  int eos = 0, unk = 0;
  bool clean_up_spaces = true;
  std::regex language_code{">>.+<<"};

  // One side of the tokenizer: the tokenizer's input mode (source) or target mode.
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
  void encode_text(const side& on, std::string text, std::vector<int>& ids) const;
  std::vector<int> encode_line(const side& on, const std::string& text) const;
  std::vector<std::vector<int>> ids_of_pieces(const side& on, const std::vector<std::vector<std::string>>& rows) const;
  // The id of language `code` ("fr" or "__fr__" for M2M100); an error naming it if unknown.
  int language_id(const std::string& code) const;

  // The family DIR's tokenizer_config.json names (tokenizer_class), else marian if
  // DIR has MarianTokenizer's files; false if neither.
  static bool family_of(const std::string& dir, family& kind);
  // Fills the state from DIR's files, one family each (tokenizer_files.cpp).
  void load_marian(const std::string& dir);
  void load_multilingual(const std::string& dir);
};

} // namespace halformer
