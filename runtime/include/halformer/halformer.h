/* halformer C API: load a model directory, translate token-id sentences, run a
 * teacher-forced forward pass. Every function returns 0 on success or -1 on
 * error; halformer_last_error_message() then describes it (per thread). */
#ifndef HALFORMER_H
#define HALFORMER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct halformer_model halformer_model; /* opaque */

/* threads: 0 for all cores. *out receives the model; free with halformer_model_free. */
int halformer_model_load(const char* dir, int threads, halformer_model** out);
/* The same on a device: "cpu", "cuda", "opencl", or "auto" (CUDA, else an OpenCL
 * GPU, else the CPU). A named device that is not usable is an error. */
int halformer_model_load_on(const char* dir, int threads, const char* device, halformer_model** out);
/* The same with the GEMMs' compute type: "float32", "int8" (weights quantized at
 * load, activations per row, exact int32 sums), "bfloat16" (weights rounded at
 * load, float32 sums; CPUs with AVX-512 BF16 only, elsewhere an error naming the
 * missing feature) or "auto" (int8 on the CPU, float32 on a GPU). NULL: "float32"
 * (and a NULL device "cpu"). Keys and values as halformer_load_options' default. */
int halformer_model_load_with(const char* dir, int threads, const char* device, const char* compute_type,
                              halformer_model** out);
/* Every load setting. halformer_load_options_init fills in the defaults; set
 * the fields wanted, then call halformer_model_load_options. Fields added in
 * later versions go at the end, and `size` says which ones the caller knows. */
typedef struct halformer_load_options {
  size_t size;              /* sizeof(halformer_load_options), set by init */
  int threads;              /* 0: all cores */
  const char* device;       /* "cpu" (default), "cuda", "opencl" or "auto", as halformer_model_load_on */
  const char* compute_type; /* "float32" (default), "int8", "bfloat16" or "auto", as halformer_model_load_with */
  /* The decoder's attention keys and values: "float32", "float16" (half the bytes
   * a decode step reads; the CPU only) or "auto" (default: float16 with int8 or
   * bfloat16 GEMMs on the CPU, else float32). */
  const char* kv_cache;
} halformer_load_options;
void halformer_load_options_init(halformer_load_options* options);
/* NULL strings take their defaults. */
int halformer_model_load_options(const char* dir, const halformer_load_options* options, halformer_model** out);
/* The device the model runs on ("cpu", "cuda", "opencl"); valid while the model is. */
const char* halformer_model_device(const halformer_model* model);
/* The compute type it runs in ("float32", "int8" or "bfloat16"); valid while the model is. */
const char* halformer_model_compute_type(const halformer_model* model);
/* Its decoder's keys and values ("float32" or "float16"); valid while the model is. */
const char* halformer_model_kv_cache(const halformer_model* model);
void halformer_model_free(halformer_model* model);

/* Model facts: d_model, vocabularies, special ids. */
int halformer_model_dims(const halformer_model* model, int* d_model, int* src_vocab, int* tgt_vocab, int* bos_id,
                         int* eos_id, int* pad_id);

/* Translates n sentences (sentence i: src[i][0 .. src_lengths[i])) with beam search
 * (beam 1: greedy). Writes the best hypothesis of sentence i to
 * out_tokens[i * max_len ...] (without BOS, with EOS if produced), its length to
 * out_lengths[i] and its score to out_scores[i] (may be NULL). */
int halformer_translate(halformer_model* model, const int32_t* const* src, const int32_t* src_lengths, int n, int beam,
                        int max_len, float length_penalty, int32_t* out_tokens, int32_t* out_lengths,
                        float* out_scores);

/* Every decoding setting (decode_options in C++; docs/runtime.md, Decoding
 * options). halformer_decode_options_init fills in the defaults (greedy, max_len
 * 128); set the fields wanted, then call halformer_translate_options. Fields
 * added in later versions go at the end, and `size` says which ones the caller knows. */
typedef struct halformer_decode_options {
  size_t size; /* sizeof(halformer_decode_options), set by init */
  int beam, max_len;
  float length_penalty;
  /* Per sentence (NULL: none): target_prefix[i][0 .. target_prefix_lengths[i]) starts hypothesis i. */
  const int32_t* const* target_prefix;
  const int32_t* target_prefix_lengths;
  int sampling_topk; /* 1: greedy or beam search; 0: the whole vocabulary; beam 1 only */
  float sampling_topp, sampling_temperature;
  int has_seed; /* 0: a fresh seed per call */
  uint64_t seed;
  float repetition_penalty;
  int no_repeat_ngram_size, min_decoding_length, max_input_length;
  /* Beam 1: on_token(user, sentence, token) as each token joins a hypothesis (NULL: none). */
  void (*on_token)(void* user, int sentence, int32_t token);
  void* user;
  /* A token forced first in every hypothesis with log P 0 (NLLB's and M2M100's
   * target language code; -1: the model's generation_config's, if any). */
  int forced_bos_id;
} halformer_decode_options;
void halformer_decode_options_init(halformer_decode_options* options);
/* halformer_translate with every decoding setting: the best hypothesis of sentence
 * i to out_tokens[i * options->max_len ...], its length and score (may be NULL). */
int halformer_translate_options(halformer_model* model, const int32_t* const* src, const int32_t* src_lengths, int n,
                                const halformer_decode_options* options, int32_t* out_tokens, int32_t* out_lengths,
                                float* out_scores);

/* Teacher-forced forward pass: src [batch][src_len] and tgt [batch][tgt_len], padded
 * with pad_id at the end; logits [batch][tgt_len][tgt_vocab]; memory (may be NULL)
 * [batch][src_len][d_model]. */
int halformer_forward(halformer_model* model, const int64_t* src, int batch, int src_len, const int64_t* tgt,
                      int tgt_len, float* logits, float* memory);

const char* halformer_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif
