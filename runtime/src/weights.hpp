// Model weights, repacked once from PyTorch's state_dict into the kernels' layouts
// (README, "Kernels"): every nn.Linear weight [out][in] becomes (out, in) in
// Halide order with `out` innermost, attention projections are split per Q/K/V
// into head layout (d_k, heads, d_model), embeddings stay (d_model, vocab).
#pragma once

#include "halformer/config.hpp"
#include "safetensors.hpp"

#include <HalideBuffer.h>

#include <map>
#include <string>
#include <vector>

namespace halformer {

using fbuffer = Halide::Runtime::Buffer<float>;
using ibuffer = Halide::Runtime::Buffer<int32_t>;

// One layer's tensors under the names dsl/layers.hpp gives them
// ("self_attn.w_q", "norm1.weight", "linear1.weight", ...).
using layer_tensors = std::map<std::string, fbuffer>;

struct model_weights {
  fbuffer src_embed, tgt_embed;           // (d_model, vocab)
  fbuffer encoder_norm_w, encoder_norm_b; // (d_model), when final_norm
  fbuffer decoder_norm_w, decoder_norm_b;
  fbuffer generator_w, generator_b; // (tgt_vocab, d_model), (tgt_vocab)
  std::vector<layer_tensors> encoder, decoder;

  static model_weights load(const safetensors_file& file, const model_config& config);
};

} // namespace halformer
