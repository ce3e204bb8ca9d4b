// The C API over halformer::Model: exceptions become -1 and a per-thread message.
#include "halformer/halformer.h"

#include "halformer/model.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

struct halformer_model {
  halformer::Model model;
  std::string device, compute_type, kv_cache;
};

namespace {
thread_local std::string last_error;

template <class F> int guarded(F&& f) {
  try {
    f();
    last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    last_error = e.what();
  } catch (...) {
    last_error = "unknown error";
  }
  return -1;
}
void require(bool ok, const char* what) {
  if (!ok)
    throw halformer::error(what);
}

std::vector<halformer::sentence> rows_of(const int32_t* const* rows, const int32_t* lengths, int n, const char* what) {
  std::vector<halformer::sentence> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (lengths[i] < 0 || (!rows[i] && lengths[i] != 0))
      throw halformer::error(std::string("halformer_translate: bad ") + what + " length " + std::to_string(lengths[i]) +
                             " at " + std::to_string(i));
    out[std::size_t(i)].assign(rows[i], rows[i] + lengths[i]);
  }
  return out;
}

halformer::decode_options decode_options_of(const halformer_decode_options& c, int n) {
  halformer::decode_options o;
  o.beam = c.beam, o.max_len = c.max_len, o.length_penalty = c.length_penalty;
  require((c.target_prefix == nullptr) == (c.target_prefix_lengths == nullptr),
          "halformer_translate_options: target_prefix and target_prefix_lengths go together");
  if (c.target_prefix)
    o.target_prefix = rows_of(c.target_prefix, c.target_prefix_lengths, n, "target_prefix");
  o.sampling_topk = c.sampling_topk, o.sampling_topp = c.sampling_topp;
  o.sampling_temperature = c.sampling_temperature;
  if (c.has_seed)
    o.seed = c.seed;
  o.repetition_penalty = c.repetition_penalty, o.no_repeat_ngram_size = c.no_repeat_ngram_size;
  o.min_decoding_length = c.min_decoding_length, o.max_input_length = c.max_input_length;
  o.forced_bos_id = c.forced_bos_id;
  if (c.on_token)
    o.on_token = [f = c.on_token, user = c.user](std::size_t i, int token) { f(user, int(i), int32_t(token)); };
  return o;
}
} // namespace

extern "C" {

int halformer_model_load(const char* dir, int threads, halformer_model** out) {
  return halformer_model_load_on(dir, threads, "cpu", out);
}

int halformer_model_load_on(const char* dir, int threads, const char* device, halformer_model** out) {
  return halformer_model_load_with(dir, threads, device, nullptr, out);
}

int halformer_model_load_with(const char* dir, int threads, const char* device, const char* compute_type,
                              halformer_model** out) {
  halformer_load_options o;
  halformer_load_options_init(&o);
  o.threads = threads, o.device = device, o.compute_type = compute_type; // NULL: the defaults
  return halformer_model_load_options(dir, &o, out);
}

void halformer_load_options_init(halformer_load_options* options) {
  static const halformer::load_options defaults;
  if (!options)
    return;
  *options = {sizeof(halformer_load_options), defaults.threads, defaults.device.c_str(), defaults.compute_type.c_str(),
              defaults.kv_cache.c_str()};
}

int halformer_model_load_options(const char* dir, const halformer_load_options* options, halformer_model** out) {
  return guarded([&] {
    require(dir && options && out, "halformer_model_load_options: dir, options and out must not be NULL");
    require(options->size == sizeof(halformer_load_options),
            "halformer_model_load_options: options->size is not sizeof(halformer_load_options) of this version: "
            "call halformer_load_options_init first");
    halformer::load_options o;
    o.threads = options->threads;
    o.device = options->device ? options->device : o.device;
    o.compute_type = options->compute_type ? options->compute_type : o.compute_type;
    o.kv_cache = options->kv_cache ? options->kv_cache : o.kv_cache;
    auto* m = new halformer_model{halformer::Model::load(dir, o), "", "", ""};
    m->device = m->model.device(), m->compute_type = m->model.compute_type(), m->kv_cache = m->model.kv_cache();
    *out = m;
  });
}

const char* halformer_model_device(const halformer_model* model) { return model ? model->device.c_str() : ""; }
const char* halformer_model_compute_type(const halformer_model* model) {
  return model ? model->compute_type.c_str() : "";
}
const char* halformer_model_kv_cache(const halformer_model* model) { return model ? model->kv_cache.c_str() : ""; }

void halformer_model_free(halformer_model* model) { delete model; }

int halformer_model_dims(const halformer_model* m, int* d_model, int* src_vocab, int* tgt_vocab, int* bos_id,
                         int* eos_id, int* pad_id) {
  return guarded([&] {
    require(m, "halformer_model_dims: model is NULL");
    const auto& c = m->model.config();
    if (d_model)
      *d_model = c.d_model;
    if (src_vocab)
      *src_vocab = c.src_vocab;
    if (tgt_vocab)
      *tgt_vocab = c.tgt_vocab;
    if (bos_id)
      *bos_id = c.bos_id;
    if (eos_id)
      *eos_id = c.eos_id;
    if (pad_id)
      *pad_id = c.pad_id;
  });
}

void halformer_decode_options_init(halformer_decode_options* options) {
  static const halformer::decode_options d;
  if (!options)
    return;
  *options = {sizeof(halformer_decode_options),
              d.beam,
              d.max_len,
              d.length_penalty,
              nullptr,
              nullptr,
              d.sampling_topk,
              d.sampling_topp,
              d.sampling_temperature,
              0,
              0,
              d.repetition_penalty,
              d.no_repeat_ngram_size,
              d.min_decoding_length,
              d.max_input_length,
              nullptr,
              nullptr,
              d.forced_bos_id};
}

int halformer_translate_options(halformer_model* m, const int32_t* const* src, const int32_t* src_lengths, int n,
                                const halformer_decode_options* options, int32_t* out_tokens, int32_t* out_lengths,
                                float* out_scores) {
  return guarded([&] {
    require(m && src && src_lengths && options && out_tokens && out_lengths, "halformer_translate: NULL argument");
    require(options->size == sizeof(halformer_decode_options),
            "halformer_translate_options: options->size is not sizeof(halformer_decode_options) of this version: "
            "call halformer_decode_options_init first");
    require(n > 0, "halformer_translate: n must be > 0");
    const halformer::decode_options o = decode_options_of(*options, n);
    auto results = m->model.translate(rows_of(src, src_lengths, n, "source"), o);
    for (int i = 0; i < n; ++i) {
      const auto& h = results[std::size_t(i)].at(0);
      std::copy(h.tokens.begin(), h.tokens.end(), out_tokens + std::size_t(i) * std::size_t(o.max_len));
      out_lengths[i] = int32_t(h.tokens.size());
      if (out_scores)
        out_scores[i] = h.score;
    }
  });
}

int halformer_translate(halformer_model* m, const int32_t* const* src, const int32_t* src_lengths, int n, int beam,
                        int max_len, float length_penalty, int32_t* out_tokens, int32_t* out_lengths,
                        float* out_scores) {
  halformer_decode_options o;
  halformer_decode_options_init(&o);
  o.beam = beam, o.max_len = max_len, o.length_penalty = length_penalty;
  return halformer_translate_options(m, src, src_lengths, n, &o, out_tokens, out_lengths, out_scores);
}

int halformer_forward(halformer_model* m, const int64_t* src, int batch, int src_len, const int64_t* tgt, int tgt_len,
                      float* logits, float* memory) {
  return guarded([&] {
    require(m && src && tgt && logits, "halformer_forward: NULL argument");
    require(batch > 0 && src_len > 0 && tgt_len > 0, "halformer_forward: sizes must be > 0");
    std::vector<halformer::sentence> s(batch), t(batch);
    auto id = [](int64_t v, const char* what) {
      if (v < 0 || v > INT32_MAX)
        throw halformer::error(std::string("halformer_forward: ") + what + " token id " + std::to_string(v) +
                               " is out of range");
      return int(v);
    };
    for (int b = 0; b < batch; ++b) {
      for (int j = 0; j < src_len; ++j)
        s[b].push_back(id(src[std::size_t(b) * src_len + j], "source"));
      for (int j = 0; j < tgt_len; ++j)
        t[b].push_back(id(tgt[std::size_t(b) * tgt_len + j], "target"));
    }
    std::vector<float> l, mem;
    m->model.forward(s, t, l, memory ? &mem : nullptr);
    std::copy(l.begin(), l.end(), logits);
    if (memory)
      std::copy(mem.begin(), mem.end(), memory);
  });
}

const char* halformer_last_error_message(void) { return last_error.c_str(); }
}
