// Text <-> token ids for a MarianMT directory, as transformers' MarianTokenizer
// does it: SentencePiece (source.spm, target.spm) and vocab.json (target_vocab.json
// when tokenizer_config.json says separate_vocabs). Errors throw halformer::error.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace halformer {

class Tokenizer {
public:
  // Loads DIR/source.spm, DIR/target.spm, DIR/vocab.json and DIR/tokenizer_config.json
  // (optional: special tokens, separate_vocabs, clean_up_tokenization_spaces).
  static Tokenizer load(const std::string& dir);
  static bool available(const std::string& dir); // whether DIR has the files load() needs
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // A source line (UTF-8; invalid UTF-8 is an error) -> ids: a leading language code
  // (">>fr<<") kept as one token, special tokens written in the text kept as theirs,
  // the rest SentencePiece pieces looked up in the vocabulary (unknown: <unk>), then
  // </s>. An empty line gives </s> alone.
  std::vector<int> encode(const std::string& text) const;
  // A target text -> ids as the start of a translation (a target_prefix): as
  // MarianTokenizer(text_target=text) but without the </s> it appends, so the
  // hypothesis goes on after it. An empty text gives no ids.
  std::vector<int> encode_target_prefix(const std::string& text) const;
  // Target ids -> text: special tokens dropped, pieces joined by SentencePiece,
  // surrounding spaces stripped and the tokenizer's clean-up of spaces before
  // punctuation applied (batch_decode(skip_special_tokens=True)).
  std::string decode(const std::vector<int>& ids) const;
  // Pieces -> source ids (unknown: <unk>; nothing added), and target ids -> pieces,
  // for callers that tokenize themselves (CTranslate2's translate_batch style).
  std::vector<std::vector<int>> ids_of_pieces(const std::vector<std::vector<std::string>>& rows) const;
  // Target pieces -> target ids (a target_prefix given as pieces; unknown: <unk>).
  std::vector<std::vector<int>> target_ids_of_pieces(const std::vector<std::vector<std::string>>& rows) const;
  std::vector<std::string> pieces_of(const std::vector<int>& ids) const;

private:
  struct impl;
  explicit Tokenizer(std::unique_ptr<impl>);
  std::unique_ptr<impl> impl_;
};

// Whether `text` is valid UTF-8; if not, `where` is the byte offset of the first error.
bool valid_utf8(const std::string& text, std::size_t* where = nullptr);

} // namespace halformer
