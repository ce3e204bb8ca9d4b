// The Python package's native module: halformer.Translator over the C++ runtime.
// Decoding releases the GIL; one Translator serves several Python threads at
// once (Model's calls are thread-safe); halformer::error becomes halformer.Error.
#include "halformer/model.hpp"
#include "halformer/tokenizer.hpp"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <variant>

namespace nb = nanobind;
using namespace nb::literals;

namespace {
using halformer::decode_options;
using halformer::hypothesis;
using halformer::sentence;

using id_rows = std::vector<std::vector<int>>;
using piece_rows = std::vector<std::vector<std::string>>;

// The decoding keywords beside beam, length and hypotheses (CTranslate2's names;
// decode_options says what each does), into `o`; an unknown one is an error
// naming it. target_prefix, source_lang and target_lang are the caller's to read:
// token lists for translate_batch, texts for translate and translate_stream.
void apply_decoding_keywords(const nb::kwargs& kw, decode_options& o) {
  for (const auto& [key, value] : kw) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "sampling_topk")
      o.sampling_topk = nb::cast<int>(value);
    else if (k == "sampling_topp")
      o.sampling_topp = nb::cast<float>(value);
    else if (k == "sampling_temperature")
      o.sampling_temperature = nb::cast<float>(value);
    else if (k == "seed")
      o.seed = value.is_none() ? std::nullopt : std::optional<std::uint64_t>(nb::cast<std::uint64_t>(value));
    else if (k == "repetition_penalty")
      o.repetition_penalty = nb::cast<float>(value);
    else if (k == "no_repeat_ngram_size")
      o.no_repeat_ngram_size = nb::cast<int>(value);
    else if (k == "min_decoding_length")
      o.min_decoding_length = nb::cast<int>(value);
    else if (k == "max_input_length")
      o.max_input_length = nb::cast<int>(value);
    else if (k != "target_prefix" && k != "source_lang" && k != "target_lang")
      throw halformer::error("unknown decoding option '" + k +
                             "' (sampling_topk, sampling_topp, sampling_temperature, seed, repetition_penalty, "
                             "no_repeat_ngram_size, min_decoding_length, max_input_length, target_prefix, "
                             "source_lang, target_lang)");
  }
}

// One source's hypotheses, best first, as CTranslate2's TranslationResult.
struct TranslationResult {
  nb::list hypotheses; // token ids or pieces, as the source was given
  std::vector<float> scores;
};

class Translator {
public:
  Translator(const std::string& dir, const std::string& device, const std::string& compute_type, int threads,
             const std::string& kv_cache)
      : model_(load(dir, device, compute_type, threads, kv_cache)) {
    if (halformer::Tokenizer::available(dir))
      tokenizer_ = halformer::Tokenizer::load(dir);
  }

  // Text in, text out (nbest 1: a list of str; else a list of lists of (text, score)).
  nb::object translate(const std::vector<std::string>& texts, int beam, std::optional<int> max_len, int nbest,
                       float length_penalty, const nb::kwargs& kw) {
    const halformer::Tokenizer& t = tokenizer();
    decode_options o = options(beam, max_len, nbest, length_penalty);
    apply_decoding_keywords(kw, o);
    const std::string source_lang = languages(kw, o, true);
    std::vector<sentence> sources;
    std::vector<std::size_t> of_text; // source i is texts[of_text[i]]; empty texts stay empty
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (!texts[i].empty()) {
        try {
          sources.push_back(t.encode(texts[i], source_lang));
        } catch (const halformer::error& e) {
          throw halformer::error("text " + std::to_string(i) + ": " + e.what());
        }
        of_text.push_back(i);
      }
    if (kw.contains("target_prefix"))
      o.target_prefix =
          text_prefixes(nb::cast<std::vector<std::optional<std::string>>>(kw["target_prefix"]), texts.size(), of_text);
    const auto results = decode(sources, o);
    std::vector<std::vector<std::pair<std::string, float>>> out(texts.size());
    for (std::size_t i = 0; i < results.size(); ++i)
      for (const hypothesis& h : results[i])
        out[of_text[i]].emplace_back(t.decode(h.tokens), h.score);
    nb::list list;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (nbest == 1)
        list.append(out[i].empty() ? std::string() : out[i][0].first);
      else
        list.append(nb::cast(out[i]));
    }
    return list;
  }

  // CTranslate2's translate_batch: sources as token ids or as pieces (then looked
  // up in the directory's vocabulary; EOS is not added), hypotheses in kind.
  std::vector<TranslationResult> translate_batch(const std::variant<id_rows, piece_rows>& source, int beam,
                                                 std::optional<int> max_len, int nbest, float length_penalty,
                                                 const nb::kwargs& kw) {
    const bool pieces = std::holds_alternative<piece_rows>(source);
    std::vector<sentence> sources = token_rows(source);
    decode_options o = options(beam, max_len, nbest, length_penalty);
    apply_decoding_keywords(kw, o);
    languages(kw, o, false);
    if (kw.contains("target_prefix")) {
      const auto prefix = nb::cast<std::variant<id_rows, piece_rows>>(kw["target_prefix"]);
      o.target_prefix = std::holds_alternative<piece_rows>(prefix)
                            ? tokenizer().target_ids_of_pieces(std::get<piece_rows>(prefix))
                            : std::get<id_rows>(prefix);
    }
    const auto results = decode(sources, o);
    std::vector<TranslationResult> out(results.size());
    for (std::size_t i = 0; i < results.size(); ++i)
      for (const hypothesis& h : results[i]) {
        out[i].hypotheses.append(pieces ? nb::cast(tokenizer().pieces_of(h.tokens)) : nb::cast(h.tokens));
        out[i].scores.push_back(h.score);
      }
    return out;
  }

  // translate_stream's native half: translates one text greedily (or sampling),
  // calling on_token(id) from this thread as each token is decoded; the GIL is
  // released in between. Returns the translation's ids.
  std::vector<int> translate_tokens(const std::string& text, const nb::callable& on_token, std::optional<int> max_len,
                                    const nb::kwargs& kw) {
    decode_options o = options(1, max_len, 1, 1.0f);
    apply_decoding_keywords(kw, o);
    const std::string source_lang = languages(kw, o, true);
    if (kw.contains("target_prefix"))
      o.target_prefix = text_prefixes({nb::cast<std::optional<std::string>>(kw["target_prefix"])}, 1, {0});
    o.on_token = [&on_token](std::size_t, int token) {
      nb::gil_scoped_acquire locked;
      on_token(token);
    };
    const auto results = decode({tokenizer().encode(text, source_lang)}, o);
    return results.at(0).at(0).tokens;
  }
  std::string decode_text(const std::vector<int>& ids) const { return tokenizer().decode(ids); }

  std::string compute_type() const { return model_.compute_type(); }
  std::string kv_cache() const { return model_.kv_cache(); }
  std::size_t weight_bytes() const { return model_.weight_bytes(); }
  std::string device() const { return model_.device(); }

private:
  static halformer::Model load(const std::string& dir, const std::string& device, const std::string& compute_type,
                               int threads, const std::string& kv_cache) {
    halformer::load_options o;
    o.device = device, o.compute_type = compute_type, o.threads = threads, o.kv_cache = kv_cache;
    nb::gil_scoped_release unlocked;
    return halformer::Model::load(dir, o);
  }

  const halformer::Tokenizer& tokenizer() const {
    if (!tokenizer_)
      throw halformer::error("this model directory has no tokenizer (MarianMT's source.spm, target.spm, vocab.json; "
                             "NLLB's or M2M100's tokenizer_config.json and files); translate_batch takes token ids");
    return *tokenizer_;
  }

  // source_lang and target_lang (NLLB, M2M100): target_lang's code is forced
  // first; returns source_lang's (text only: translate_batch's sources are tokens).
  std::string languages(const nb::kwargs& kw, decode_options& o, bool text) const {
    const auto code = [&](const char* key) { return kw.contains(key) ? nb::cast<std::string>(kw[key]) : ""; };
    if (!text && kw.contains("source_lang"))
      throw halformer::error("source_lang is for text (translate, translate_stream): translate_batch's sources are "
                             "tokens, the language code among them");
    if (text || kw.contains("target_lang"))
      o.forced_bos_id = tokenizer().forced_bos_id(code("target_lang"), model_.config().forced_bos_id);
    return code("source_lang");
  }

  std::vector<sentence> token_rows(const std::variant<id_rows, piece_rows>& rows) const {
    return std::holds_alternative<piece_rows>(rows) ? tokenizer().ids_of_pieces(std::get<piece_rows>(rows))
                                                    : std::get<id_rows>(rows);
  }

  // translate's target_prefix: one text (or None) per text, tokenized as
  // target text; the prefixes of the texts that are decoded (of_text).
  std::vector<sentence> text_prefixes(const std::vector<std::optional<std::string>>& prefixes, std::size_t texts,
                                      const std::vector<std::size_t>& of_text) const {
    if (prefixes.size() != texts)
      throw halformer::error("target_prefix has " + std::to_string(prefixes.size()) + " entries for " +
                             std::to_string(texts) + " texts");
    std::vector<sentence> rows;
    for (const std::size_t i : of_text)
      try {
        rows.push_back(prefixes[i] ? tokenizer().encode_target_prefix(*prefixes[i]) : sentence{});
      } catch (const halformer::error& e) {
        throw halformer::error("target_prefix " + std::to_string(i) + ": " + e.what());
      }
    return rows;
  }

  // max_len: none gives 256 new tokens, or fewer where the model's positions end.
  decode_options options(int beam, std::optional<int> max_len, int nbest, float length_penalty) const {
    const int last = model_.config().max_positions;
    decode_options o;
    o.beam = beam, o.nbest = nbest, o.length_penalty = length_penalty;
    o.max_len = max_len ? *max_len : last > 0 ? std::min(256, last) : 256;
    return o;
  }
  std::vector<std::vector<hypothesis>> decode(const std::vector<sentence>& sources, const decode_options& o) {
    if (sources.empty())
      return {};
    nb::gil_scoped_release unlocked; // other Python threads run while this one decodes
    return model_.translate(sources, o);
  }

  halformer::Model model_;
  std::optional<halformer::Tokenizer> tokenizer_;
};
} // namespace

NB_MODULE(_halformer, m) {
  m.doc() = "halformer's native module (see the package's docstring)";
  m.attr("__version__") = HALFORMER_VERSION;
  nb::exception<halformer::error>(m, "Error", PyExc_RuntimeError);

  nb::class_<TranslationResult>(m, "TranslationResult")
      .def_ro("hypotheses", &TranslationResult::hypotheses, "hypotheses, best first (ids or pieces)")
      .def_ro("scores", &TranslationResult::scores, "log P / length^length_penalty per hypothesis")
      .def("__repr__", [](const TranslationResult& r) {
        return "TranslationResult(hypotheses=" + nb::cast<std::string>(nb::repr(r.hypotheses)) +
               ", scores=" + nb::cast<std::string>(nb::repr(nb::cast(r.scores))) + ")";
      });

  nb::class_<halformer::Tokenizer>(m, "Tokenizer",
                                   "A model directory's tokenizer, as transformers' MarianTokenizer, NllbTokenizer "
                                   "or M2M100Tokenizer")
      .def(
          "__init__",
          [](halformer::Tokenizer* t, const std::string& dir) {
            new (t) halformer::Tokenizer(halformer::Tokenizer::load(dir));
          },
          "model_dir"_a)
      .def("encode", &halformer::Tokenizer::encode, "text"_a, "source_lang"_a = "",
           "Source text -> ids, </s> appended (NLLB / M2M100: source_lang's code first)")
      .def("language_id", &halformer::Tokenizer::language_id, "code"_a,
           "A language code's token id (NLLB 'fra_Latn', M2M100 'fr')")
      .def("encode_target_prefix", &halformer::Tokenizer::encode_target_prefix, "text"_a,
           "Target text -> ids as the start of a translation (text_target's ids without </s>)")
      .def("decode", &halformer::Tokenizer::decode, "ids"_a,
           "Target ids -> text (batch_decode(skip_special_tokens=True))");

  nb::class_<Translator>(m, "Translator",
                         "A loaded model (MarianMT, NLLB, M2M100 or halformer's format) and its tokenizer")
      .def(nb::init<const std::string&, const std::string&, const std::string&, int, const std::string&>(),
           "model_dir"_a, "device"_a = "cpu", "compute_type"_a = "float32", "threads"_a = 0, "kv_cache"_a = "auto",
           "kv_cache: the decoder's attention keys and values, float32, float16 (CPU) or auto (float16 with int8 or "
           "bfloat16 on the CPU)")
      .def("translate", &Translator::translate, "texts"_a, "beam"_a = 1, "max_len"_a = nb::none(), "nbest"_a = 1,
           "length_penalty"_a = 1.0f, "options"_a,
           "Translates text lines (empty ones stay empty); options: sampling_topk, sampling_topp, "
           "sampling_temperature, seed, repetition_penalty, no_repeat_ngram_size, min_decoding_length, "
           "max_input_length, target_prefix (one target text or None per line: the translation starts with it)")
      .def("translate_batch", &Translator::translate_batch, "source"_a, "beam_size"_a = 1,
           "max_decoding_length"_a = nb::none(), "num_hypotheses"_a = 1, "length_penalty"_a = 1.0f, "options"_a,
           "Translates token lists (ids, or pieces through the vocabulary) as CTranslate2's translate_batch; "
           "options: translate's and target_prefix (one token list per source, as the sources are given)")
      .def("_translate_tokens", &Translator::translate_tokens, "text"_a, "on_token"_a, "max_len"_a = nb::none(),
           "options"_a)
      .def("_decode_text", &Translator::decode_text, "ids"_a)
      .def_prop_ro("compute_type", &Translator::compute_type)
      .def_prop_ro("kv_cache", &Translator::kv_cache, "float32 or float16 (what auto chose)")
      .def_prop_ro("device", &Translator::device)
      .def_prop_ro("weight_bytes", &Translator::weight_bytes, "resident weight bytes (tied tables counted once)");
}
