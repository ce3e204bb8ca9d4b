// Runs the encoder and decoder by walking the DSL's layer descriptions
// (dsl/layers.hpp): each step is bound once, at construction, to weight buffers
// and to activation buffers sized by reserve(); running a step only makes views
// (crops) of those buffers, so nothing is allocated inside a decode loop.
#pragma once

#include "weights.hpp"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace halformer::dsl::layers {
struct flat_step;
}

namespace halformer {

class executor {
public:
  executor(const model_config& config, const model_weights& weights);

  // Sizes every activation buffer and cache for `rows` batch rows, sources of up to
  // `src_len` tokens and `tgt_len` target positions. Allocates only when growing.
  void reserve(int rows, int src_len, int tgt_len);

  // Encodes ids (src_len, rows) with per-row lengths; the result stays in memory().
  void encode(const ibuffer& ids, const ibuffer& lengths);
  // Repeats every encoded row k times (row r -> rows r*k .. r*k + k-1), for beams.
  void expand(int k);
  // Projects memory() to every decoder layer's cross-attention keys and values.
  void project_memory();
  // Runs the decoder on ids (t, rows) at positions pos .. pos + t - 1, with the
  // self-attention caches holding positions < pos; returns logits (vocab, t, rows).
  fbuffer decode(const ibuffer& ids, int pos);
  // Log-probabilities (vocab, t, rows) of the last decode()'s logits.
  fbuffer log_probs();
  // Row r of every self-attention cache becomes row parent[r] (positions < len).
  void reorder_caches(const std::vector<int>& parent, int len);

  fbuffer memory() const; // (d_model, src_len, rows)
  int rows() const { return rows_; }

private:
  enum class fn {
    qkv_projection,
    kv_projection,
    q_projection,
    attention,
    out_projection,
    ffn_relu,
    ffn_gelu,
    layernorm
  };
  enum class role { weight, lengths, activation, cache_write, cache_read };
  struct operand {
    role kind;
    const fbuffer* weight = nullptr;
    fbuffer* act = nullptr;
    ibuffer* lengths = nullptr;
    int seq_dim = -1; // index of the src/tgt dimension, -1 if none
    bool seq_is_tgt = false;
    int batch_dim = -1;
  };
  struct step {
    fn function;
    std::string name;
    bool causal = false, offset_is_position = false;
    std::vector<operand> args; // in the kernel function's argument order
  };
  using plan = std::vector<step>;

  plan bind(const std::vector<dsl::layers::flat_step>& steps, const layer_tensors& weights, const std::string& scope,
            bool decoder);
  void run(const plan& p);
  fbuffer view(const operand& o) const;
  void check(int rc, const char* kernel) const; // const char*: no allocation on success
  fbuffer& activation(const std::string& key, const std::vector<std::string>& dims, bool cache);

  const model_config& config_;
  const model_weights& weights_;
  std::vector<plan> encoder_, decoder_;
  std::vector<step> cross_; // every decoder layer's kv_projection, run once per source
  std::map<std::string, fbuffer> acts_;
  std::map<std::string, std::vector<std::string>> act_dims_;
  std::vector<std::string> caches_;
  ibuffer src_lengths_, tgt_lengths_, vocab_lengths_;
  fbuffer logits_, log_probs_, normed_;
  fbuffer scratch_;
  int rows_cap_ = 0, src_cap_ = 0, tgt_cap_ = 0;
  // The current call's extents.
  int rows_ = 0, src_ = 0, t_ = 0, pos_ = 0;
};

} // namespace halformer
