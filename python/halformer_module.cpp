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
                       float length_penalty) {
    const halformer::Tokenizer& t = tokenizer();
    std::vector<sentence> sources;
    std::vector<std::size_t> of_text; // source i is texts[of_text[i]]; empty texts stay empty
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (!texts[i].empty()) {
        try {
          sources.push_back(t.encode(texts[i]));
        } catch (const halformer::error& e) {
          throw halformer::error("text " + std::to_string(i) + ": " + e.what());
        }
        of_text.push_back(i);
      }
    const auto results = decode(sources, beam, max_len, nbest, length_penalty);
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
                                                 std::optional<int> max_len, int nbest, float length_penalty) {
    const bool pieces = std::holds_alternative<piece_rows>(source);
    std::vector<sentence> sources =
        pieces ? tokenizer().ids_of_pieces(std::get<piece_rows>(source)) : std::get<id_rows>(source);
    const auto results = decode(sources, beam, max_len, nbest, length_penalty);
    std::vector<TranslationResult> out(results.size());
    for (std::size_t i = 0; i < results.size(); ++i)
      for (const hypothesis& h : results[i]) {
        out[i].hypotheses.append(pieces ? nb::cast(tokenizer().pieces_of(h.tokens)) : nb::cast(h.tokens));
        out[i].scores.push_back(h.score);
      }
    return out;
  }

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
      throw halformer::error("this model directory has no tokenizer (source.spm, target.spm, vocab.json); "
                             "translate_batch takes token ids");
    return *tokenizer_;
  }

  // max_len: none gives 256 new tokens, or fewer where the model's positions end.
  std::vector<std::vector<hypothesis>> decode(const std::vector<sentence>& sources, int beam,
                                              std::optional<int> max_len, int nbest, float length_penalty) {
    if (sources.empty())
      return {};
    const int last = model_.config().max_positions;
    decode_options o;
    o.beam = beam, o.nbest = nbest, o.length_penalty = length_penalty;
    o.max_len = max_len ? *max_len : last > 0 ? std::min(256, last) : 256;
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

  nb::class_<halformer::Tokenizer>(m, "Tokenizer", "A MarianMT directory's tokenizer, as transformers' MarianTokenizer")
      .def(
          "__init__",
          [](halformer::Tokenizer* t, const std::string& dir) {
            new (t) halformer::Tokenizer(halformer::Tokenizer::load(dir));
          },
          "model_dir"_a)
      .def("encode", &halformer::Tokenizer::encode, "text"_a, "Source text -> ids, </s> appended")
      .def("decode", &halformer::Tokenizer::decode, "ids"_a,
           "Target ids -> text (batch_decode(skip_special_tokens=True))");

  nb::class_<Translator>(m, "Translator",
                         "A loaded model (a MarianMT directory or halformer's format) and its tokenizer")
      .def(nb::init<const std::string&, const std::string&, const std::string&, int, const std::string&>(),
           "model_dir"_a, "device"_a = "cpu", "compute_type"_a = "float32", "threads"_a = 0, "kv_cache"_a = "auto",
           "kv_cache: the decoder's attention keys and values, float32, float16 (CPU) or auto (float16 with int8 or "
           "bfloat16 on the CPU)")
      .def("translate", &Translator::translate, "texts"_a, "beam"_a = 1, "max_len"_a = nb::none(), "nbest"_a = 1,
           "length_penalty"_a = 1.0f, "Translates text lines (empty ones stay empty)")
      .def("translate_batch", &Translator::translate_batch, "source"_a, "beam_size"_a = 1,
           "max_decoding_length"_a = nb::none(), "num_hypotheses"_a = 1, "length_penalty"_a = 1.0f,
           "Translates token lists (ids, or pieces through the vocabulary) as CTranslate2's translate_batch")
      .def_prop_ro("compute_type", &Translator::compute_type)
      .def_prop_ro("kv_cache", &Translator::kv_cache, "float32 or float16 (what auto chose)")
      .def_prop_ro("device", &Translator::device)
      .def_prop_ro("weight_bytes", &Translator::weight_bytes, "resident weight bytes (tied tables counted once)");
}
