// A model's config.json (the contract: docs/model-format.md).
#pragma once

#include <string>
#include <vector>

namespace halformer {

struct model_config {
  int d_model = 0, nhead = 0, num_encoder_layers = 0, num_decoder_layers = 0, dim_feedforward = 0;
  int src_vocab = 0, tgt_vocab = 0;
  bool norm_first = false, final_norm = true, scale_embedding = true;
  std::string activation = "relu";
  float layer_norm_eps = 1e-5f;
  int pad_id = 0, bos_id = 1, eos_id = 2;
  int d_k() const { return d_model / nhead; }

  // Parses and validates JSON text; `where` names the source in messages.
  // Unknown keys are reported in `warnings`.
  static model_config parse(const std::string& text, const std::string& where, std::vector<std::string>* warnings);
  static model_config load(const std::string& path, std::vector<std::string>* warnings);
};

} // namespace halformer
