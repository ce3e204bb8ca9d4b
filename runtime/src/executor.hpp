// Runs the encoder and decoder by walking the DSL's layer descriptions
// (dsl/layers.hpp): each step is bound once, at construction, to weight buffers
// and to activation buffers sized by reserve(); running a step only makes views
// (crops) of those buffers, so nothing is allocated inside a decode loop.
//
// On a GPU (OpenCL, CUDA) every buffer the executor owns is allocated on the
// device once, in reserve(); weights are uploaded once, at load. Kernels then read
// and write device memory only: a view shares its parent's device allocation
// (a device crop), and the executor, not Halide's dirty bits, knows where data is
// current. Host code touches device data only where it must: token ids and
// lengths go up, logits or log-probabilities and (on request) the encoder output
// come down, and beam reordering copies cache rows on the device.
#pragma once

#include "devices.hpp"
#include "halformer/dsl/layers.hpp"
#include "halformer/model.hpp"
#include "profiler.hpp"
#include "weights.hpp"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace halformer {

// The decoder's attention keys and values (dsl/gemm_steps.hpp, kv_type).
using kv_type = dsl::layers::kv_type;
// float16 where the GEMMs are int8 or bfloat16 on the CPU: those models already
// round their activations more coarsely (int8 steps of max / 127, bfloat16's 8
// significant bits) than float16's 11 bits, and a decode step reads every cached
// key and value, so halving their bytes speeds up the steps attention dominates
// (beams, long sources, large batches). float32 models keep float32 caches, and
// GPUs float32 ones (the float16 kernels are CPU kernels).
kv_type default_kv(device d, gemm_weights gemms);

// The model as the DSL describes it (dsl/layers.hpp): each phase's input, layers
// and output, and what decoding reads of the logits.
struct layer_descriptions {
  std::vector<dsl::layers::flat_step> encoder, decoder;
  std::vector<dsl::layers::flat_step> encoder_input, encoder_output, decoder_input, decoder_output;
  std::vector<dsl::layers::flat_step> candidates, pick, sampling;
  static layer_descriptions of(const model_config& config, gemm_weights gemms = gemm_weights::float32,
                               kv_type kv = kv_type::float32);
};

// A buffer of any element type the kernels exchange: float32 activations, float16
// caches (an activation's type is its description's).
using abuffer = Halide::Runtime::Buffer<>;

class executor {
public:
  // `weights` must already be on `dev` (upload_weights()). Every step of the
  // descriptions is bound here: an unknown kernel, a weight the model lacks, or an
  // argument the description and the kernel do not agree on is an error naming it.
  executor(const model_config& config, const model_weights& weights, device dev = device::cpu);
  executor(const model_config& config, const model_weights& weights, device dev, kv_type kv);
  executor(const model_config& config, const model_weights& weights, device dev, const layer_descriptions& layers);

  // What reserve() sizes the buffers for. Allocates only when growing.
  struct capacity {
    int rows;         // decoder batch rows (sources x beam)
    int src_len;      // source tokens
    int tgt_len;      // target positions the caches hold
    int call_len = 1; // positions per decode() call: 1 when decoding step by step
                      // (the decoder's activations, logits among them, hold one
                      // position then), the whole target for forward
    int sources = 0;  // sources encoded (0: rows); the encoder's activations and the
                      // per-source tensors hold this many, not the beam rows
  };
  void reserve(const capacity& c);

  // Encodes ids (src_len, rows) with per-row lengths; the result stays in memory().
  void encode(const ibuffer& ids, const ibuffer& lengths);
  // Gives every source k decoder rows (source r -> rows r*k .. r*k + k-1), for
  // beams. Nothing per source is copied: the cross-attention keys and values and
  // the source lengths stay one per source, and the cross-attention sees a
  // source's k rows as k query positions of that source (one read of its keys and
  // values serves every beam). Call it after project_memory().
  void expand(int k);
  // Projects memory() to every decoder layer's cross-attention keys and values.
  void project_memory();
  // Runs the decoder on ids (t, rows) at positions pos .. pos + t - 1, with the
  // self-attention caches holding positions < pos; returns logits (vocab, t, rows),
  // on the host unless `logits_to_host` is false (then read them via candidates()
  // or pick()).
  fbuffer decode(const ibuffer& ids, int pos, bool logits_to_host = true);
  // Beam search's candidates of the last decode()'s logits (one position), on the
  // host: the logits (vocab, 1, rows), every chunk's largest logit (chunks, 1,
  // rows; dsl/kernels.hpp: beam_candidates) and each row's best log-probability
  // (1, rows): log p(v) = logit(v) - row max + that.
  struct beam_candidates {
    fbuffer logits, chunk_max, top_log_prob;
  };
  beam_candidates candidates();
  // Greedy decoding's choice from the last decode()'s logits at its last position:
  // per row the best token (ties: the lowest id) and its log-probability. Only
  // these come to the host. The spans hold rows() entries until the next call.
  void pick(const int*& ids, const float*& log_probs);
  // Random sampling's choice from the same logits (dsl/kernels.hpp: sample_pick):
  // per row the token drawn under `o` (top-k, top-p, temperature, repetition
  // penalty) at its draw, or its forced token, and the token's log-probability.
  // Only these come to the host, as pick()'s; per row the host gives its draw in
  // [0, 1), its forced token (-1: none) and its banned and penalized tokens.
  struct sampling_rows {
    std::vector<float> draws;
    std::vector<int> forced;
    std::vector<std::vector<int>> banned, penalized; // penalized: each token once
  };
  void sample(const decode_options& o, const sampling_rows& rows, const int*& ids, const float*& log_probs);
  // Row r of every self-attention cache becomes row parent[r] (positions < len):
  // by the rows' key table, no cache data moves.
  void reorder_caches(const std::vector<int>& parent, int len);
  // Only the batch rows `keep` (ascending; after expand(k), whole sources' blocks
  // of k) stay, as rows 0 .. keep.size() - 1, of every self-attention cache
  // (positions < len), and their sources' per-source tensors and lengths:
  // finished sentences leave the batch, and later steps cost only the live rows.
  void keep_rows(const std::vector<int>& keep, int len);

  // Kernel times go to `p` (null: not profiled). On a GPU a kernel's time is its
  // launch's unless the device API synchronizes.
  void set_profiler(profiler* p) { profiler_ = p; }
  profiler* profiling() const { return profiler_; }

  fbuffer memory() const;   // (d_model, src_len, sources), where the kernels keep it
  fbuffer memory_on_host(); // the same, copied to the host first on a GPU
  int rows() const { return rows_; }
  int sources() const { return rows_ / group_; }

  // Allocates every weight on `dev` and uploads it (nothing on the CPU).
  static void upload_weights(model_weights& w, device dev);

private:
  using role = dsl::layers::role;
  union scalar_value {
    float f32;
    int32_t i32;
    bool boolean;
  };
  struct operand {
    role kind;
    bool is_output = false;
    halide_type_t type; // element type (scalars: the value's type)
    const weight_buffer* weight = nullptr;
    abuffer* act = nullptr;         // activation, cache or per-source tensor
    ibuffer* integers = nullptr;    // lengths, the call's tokens or the picked ids
    const ibuffer* table = nullptr; // role::own_rows: the k/v row table it describes
    const double* option = nullptr; // role::decode_option: the current value
    double value = 0;               // role::constant
    int seq_dim = -1;               // index of the src/tgt dimension, -1 if none
    bool seq_is_tgt = false;
    int batch_dim = -1;
  };
  struct step {
    kernel_call call;
    std::vector<operand> args;     // in the call's (the description's) order
    bool reads_per_source = false; // cross-attention: after expand(k), rows grouped by source
  };
  using plan = std::vector<step>;
  static constexpr std::size_t max_step_args = 16;

  plan bind(const std::vector<dsl::layers::flat_step>& steps, const layer_tensors& weights, const std::string& scope,
            bool decoder);
  void bind_top(const layer_descriptions& layers);
  ibuffer& lengths_named(const std::string& name); // src_lengths, tgt_lengths or vocab_lengths
  // An activation, cache or per-source tensor: its buffer, keyed per phase or decoder layer.
  void bind_activation(const dsl::layers::flat_operand& o, const std::string& scope, bool decoder, operand& op);
  operand bind_operand(const dsl::layers::flat_operand& o, const layer_tensors& weights, const std::string& scope,
                       bool decoder);
  void run(const plan& p, phase ph);
  scalar_value scalar(const operand& o) const;
  abuffer view(const operand& o, bool grouped = false) const;
  bool staged(const operand& o) const;
  abuffer staging(const operand& o);
  void check(int rc, const char* kernel) const; // const char*: no allocation on success
  // Device residency (no-ops on the CPU).
  template <class B> void upload(B& b) const;   // after host writes; allocates on the device the first time
  template <class B> void download(B& b) const; // before host reads
  void copy(abuffer src, abuffer dst) const;    // dst = src, where the data lives
  int batch_dim_of(const std::string& per_source_key) const;
  // The encoder's activations, its output (the memory) and per-source tensors: one row per source.
  bool per_source_batch(const std::string& key, const abuffer& buf) const;
  struct row_copy {
    abuffer from, to;
  };
  // Batch row `from` of one buffer to row `to` of another (or the same; only the
  // first `len` along len_dim, if >= 0): the two views, and the copy.
  row_copy row_views(const abuffer& from_buf, int from, const abuffer& to_buf, int to, int batch_dim, int len_dim,
                     int len) const;
  void copy_row(const abuffer& from_buf, int from, const abuffer& to_buf, int to, int batch_dim, int len_dim,
                int len) const;
  // The call's part of a k/v row table (kv_rows operand): keys x query rows.
  ibuffer kv_rows_view(const operand& o) const;
  static bool identity(const ibuffer& table);
  static void written(abuffer& view); // a kernel wrote `view` (see executor.cpp)
  abuffer& activation(const std::string& key, const std::vector<std::string>& dims, halide_type_t type, role kind);

  const model_config& config_;
  const model_weights& weights_;
  const device device_;
  const halide_device_interface_t* iface_; // null on the CPU
  std::vector<plan> encoder_, decoder_;
  plan cross_; // the decoder's per-source steps (cross-attention K/V), run once per source
  plan encoder_input_, encoder_output_, decoder_input_, decoder_output_, candidates_, pick_, sampling_;
  std::map<std::string, abuffer> acts_;
  // The activations the phases hand over (float32), looked up once at binding (a
  // decode step looks nothing up by name).
  abuffer *encoder_x_ = nullptr, *memory_ = nullptr, *logits_ = nullptr, *chunk_max_ = nullptr,
          *top_log_prob_ = nullptr;
  std::map<std::string, std::vector<std::string>> act_dims_;
  std::map<std::string, halide_type_t> act_types_;
  std::vector<std::string> caches_, per_source_, source_scratch_;
  ibuffer src_lengths_, tgt_lengths_, vocab_lengths_;
  ibuffer pick_ids_; // (1, rows)
  abuffer pick_lp_;  // (1, rows), float32
  // sample()'s per-row inputs ((1, rows); the lists (rules, 1, rows), grown to the
  // longest list) and its options, by their names in layers::sampling_choice().
  abuffer sample_draws_;
  ibuffer sample_forced_, sample_banned_, sample_penalized_;
  std::map<std::string, double> sample_options_{
      {"sampling_topk", 0}, {"sampling_topp", 1}, {"sampling_temperature", 1}, {"repetition_penalty", 1}};
  void fill_sampling_rows(const sampling_rows& rows);
  void picked(const int*& ids, const float*& log_probs) const; // the picked buffers, on the host
  ibuffer tokens_;                                             // the current call's token ids (a view of the caller's)
  // Attention's k/v row tables (key position, row): the identity for sources, and
  // for the self-attention caches the row holding each position of each row's
  // history (beams share their prefixes' rows); old_tgt_rows_ is reorder's copy.
  ibuffer src_rows_, tgt_rows_;
  std::vector<int32_t> old_tgt_rows_;
  // Whether the current call's view of tgt_rows_ is the identity (own_rows): until
  // beams share rows or finished rows leave. src_rows_ is the identity always.
  bool tgt_rows_own_ = true;
  std::map<const abuffer*, abuffer> staging_; // per cache, on a GPU (see staged())
  int rows_cap_ = 0, src_cap_ = 0, tgt_cap_ = 0, call_cap_ = 0, sources_cap_ = 0;
  profiler* profiler_ = nullptr;
  // The current call's extents.
  int rows_ = 0, src_ = 0, t_ = 0, pos_ = 0;
  int group_ = 1; // decoder rows per source (expand())
};

} // namespace halformer
