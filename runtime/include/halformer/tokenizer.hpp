// Text <-> token ids as transformers 4.40's tokenizers do it, for a MarianMT
// directory (MarianTokenizer: SentencePiece source.spm, target.spm and vocab.json;
// target_vocab.json when tokenizer_config.json says separate_vocabs), an NLLB one
// (NllbTokenizer: sentencepiece.bpe.model with fairseq's ids, language codes and
// <mask> after the pieces) or an M2M100 one (M2M100Tokenizer: vocab.json and
// sentencepiece.bpe.model, __xx__ language codes). Errors throw halformer::error.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace halformer {

class Tokenizer {
public:
  // Loads DIR's files: NLLB's or M2M100's where tokenizer_config.json's
  // tokenizer_class names them, else MarianTokenizer's (tokenizer_config.json
  // optional: special tokens, separate_vocabs, clean_up_tokenization_spaces).
  // Every id the files give lies within config.json's vocab_size.
  static Tokenizer load(const std::string& dir);
  static bool available(const std::string& dir); // whether DIR has the files load() needs
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // A source line (UTF-8; invalid UTF-8 is an error) -> ids: special tokens written
  // in the text kept as theirs, the rest SentencePiece pieces looked up in the
  // vocabulary (unknown: <unk>), then </s>. Marian: a leading language code
  // (">>fr<<") kept as one token; source_lang must be empty. NLLB and M2M100:
  // source_lang's code first (empty: tokenizer_config.json's src_lang).
  std::vector<int> encode(const std::string& text, const std::string& source_lang = "") const;
  // Whether languages are chosen by code (NLLB, M2M100), and a code's token id
  // ("fra_Latn"; M2M100's "fr" or "__fr__"): decode_options::forced_bos_id for
  // the target language. An unknown code is an error naming it.
  bool multilingual() const;
  int language_id(const std::string& code) const;
  // decode_options::forced_bos_id for `target_lang`: its code's id, or -1 where
  // empty. A multilingual tokenizer without target_lang is an error unless the
  // model forces a first token itself (`model_forced_bos` >= 0: its
  // generation_config's forced_bos_token_id).
  int forced_bos_id(const std::string& target_lang, int model_forced_bos) const;
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
