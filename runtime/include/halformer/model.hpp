// The halformer C++ API: load a model directory exported from PyTorch, run the
// encoder, decode (greedy or beam search) with KV caches, or run a teacher-forced
// forward pass. Errors throw halformer::error with a message naming the problem.
#pragma once

#include "halformer/config.hpp"
#include "halformer/error.hpp"
#include "halformer/profile.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace halformer {

using sentence = std::vector<int>;

// Named as CTranslate2's translate_batch names them; docs/runtime.md (Decoding options) says how
// each works and how they combine.
struct decode_options {
  int beam = 1;                // 1: greedy (or sampling)
  int max_len = 128;           // new tokens per sentence, EOS included (the prefix counts)
  int nbest = 1;               // hypotheses returned per sentence (<= beam)
  float length_penalty = 1.0f; // beam scores are log P / length^length_penalty
  // Per sentence (none, or one per source): tokens the hypothesis starts with,
  // forced, and part of it; shorter than max_len, without EOS.
  std::vector<sentence> target_prefix;
  // Forced as every hypothesis' first token, before its prefix, with log P 0
  // (generate's forced_bos_token_id: NLLB's and M2M100's target language;
  // Tokenizer::language_id gives it); -1: the model's generation_config's, if any.
  int forced_bos_id = -1;
  // Random sampling (beam 1 only): from the sampling_topk most likely tokens (0:
  // the whole vocabulary; 1: greedy), then the most likely of those whose
  // probabilities sum to sampling_topp, at softmax(logits / sampling_temperature).
  int sampling_topk = 1;
  float sampling_topp = 1.0f;        // in (0, 1]
  float sampling_temperature = 1.0f; // > 0
  // The same seed gives the same output for a sentence at the same index of the
  // call, in any batch size and thread count; none: a fresh seed per call.
  std::optional<std::uint64_t> seed;
  float repetition_penalty = 1.0f; // > 0: logits of tokens already in the hypothesis / (or x, if negative) this
  int no_repeat_ngram_size = 0;    // > 0: no n-gram of this size twice in a hypothesis
  int min_decoding_length = 0;     // tokens before EOS may end a hypothesis (the prefix counts)
  int max_input_length = 0;        // > 0: sources are cut to this many tokens
  // Beam 1: called with (sentence, token) as each token joins a hypothesis, the
  // prefix's and EOS included (their concatenation is the hypothesis).
  std::function<void(std::size_t, int)> on_token;
};

struct hypothesis {
  sentence tokens; // generated ids, without BOS, with EOS if produced
  float score;     // log-probability / length^length_penalty (greedy: log-probability)
};

struct load_options {
  int threads = 0;              // 0: all cores
  int max_source_length = 1024; // longer sources are an error
  int max_target_length = 1024; // decode_options::max_len above this is an error
  int max_batch = 64;           // sentences per batch (x beam for decoding)
  // "cpu", "cuda", "opencl", or "auto" (CUDA, else an OpenCL GPU, else the CPU;
  // warnings() says why). On a GPU the weights are uploaded once and activations
  // and caches stay on the device; a named device that is not usable is an error.
  std::string device = "cpu";
  // The GEMMs' numeric type: "float32"; "int8" (weights quantized at load, one
  // step per output row; activations quantized per row; exact int32 sums;
  // LayerNorm, softmax and attention in float32); "bfloat16" (weights rounded to
  // bfloat16 at load, inputs rounded per kernel, float32 sums: vdpbf16ps; CPUs
  // with AVX-512 BF16 only, elsewhere an error naming the missing feature;
  // embeddings, LayerNorm, softmax and attention in float32); or "auto" (int8 on
  // the CPU, where it is the fastest; float32 on a GPU, whose int8 kernels are not).
  std::string compute_type = "float32";
  // The decoder's attention keys and values (its self-attention caches and the
  // encoder memory's cross-attention keys and values): "float32"; "float16" (half
  // the bytes a decode step reads; rounded to nearest, saturating at +-65504; the
  // CPU only); or "auto": float16 with int8 or bfloat16 GEMMs on the CPU, whose
  // activations are already rounded more coarsely, else float32.
  std::string kv_cache = "auto";
};

// Thread safety: translate(), encode() and forward() may be called from several
// threads at once on one Model (each call decodes with its own executor:
// activations, caches and state; the weights are shared). With profiling on,
// calls run one at a time.
class Model {
public:
  // Loads DIR/config.json and DIR/model.safetensors; weights are repacked once.
  static Model load(const std::string& dir, const load_options& options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const model_config& config() const;
  const std::vector<std::string>& warnings() const; // e.g. unknown config keys
  std::string device() const;                       // the device the kernels run on
  std::string compute_type() const;                 // "float32" or "int8" (what "auto" chose)
  std::string kv_cache() const;                     // "float32" or "float16" (what "auto" chose)
  // The kernels this model runs, in the order of a decode step's first use (one
  // line each: the kernel and its arguments' element types).
  std::vector<std::string> kernels() const;
  std::size_t weight_bytes() const; // resident weights

  // Throws halformer::error naming the first of `options` that translate() would
  // refuse for `sources` sentences (callers check them before reading input).
  void check_options(const decode_options& options, std::size_t sources) const;

  // Translates every sentence; results[i] holds up to nbest hypotheses, best first.
  // `on_done(i, hyps)`, if given, is called as soon as sentence i has finished.
  std::vector<std::vector<hypothesis>>
  translate(const std::vector<sentence>& sources, const decode_options& options = {},
            const std::function<void(std::size_t, const std::vector<hypothesis>&)>& on_done = {});

  // Encoder output for a batch: memory[b] is (src_len x d_model) row-major,
  // computed on the padded batch (positions past a sentence's length unspecified).
  std::vector<std::vector<float>> encode(const std::vector<sentence>& sources);

  // Incremental decoding, one step at a time: begin() encodes the sources and
  // resets the caches; each decode_step() consumes one token per sentence and
  // returns the next-token logits, (batch x tgt_vocab) row-major. One session per
  // model: begin() and decode_step() are not for concurrent use.
  void begin(const std::vector<sentence>& sources);
  std::vector<float> decode_step(const std::vector<int>& tokens);
  // The same into `logits` (resized; allocates nothing once it has the capacity).
  void decode_step(const std::vector<int>& tokens, std::vector<float>& logits);

  // Teacher-forced forward pass: src [batch][src_len], tgt [batch][tgt_len], both
  // padded with pad_id at the end. Writes logits [batch][tgt_len][tgt_vocab] and,
  // if non-null, the encoder output [batch][src_len][d_model].
  void forward(const std::vector<sentence>& src, const std::vector<sentence>& tgt, std::vector<float>& logits,
               std::vector<float>* memory = nullptr);

  // Profiling, off by default: translate() records every kernel's time per phase
  // and the host's work between them. Turning it on starts a new profile.
  void set_profiling(bool on);
  const run_profile& profile() const;

  // The kernels' ISA and the schedules compiled in.
  static std::string kernel_info();

private:
  struct impl;
  explicit Model(std::unique_ptr<impl>);
  std::unique_ptr<impl> impl_;
};

} // namespace halformer
