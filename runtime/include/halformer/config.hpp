// A model's config.json (the contract: docs/model-format.md).
#pragma once

#include <string>
#include <vector>

namespace halformer {

// Sinusoidal positions: PE(pos, 2i) = sin, PE(pos, 2i+1) = cos (the paper's), or the
// sines of every frequency first and then the cosines (Marian's, fairseq's).
enum class position_layout { interleaved, split };
// Pair i's frequency: 10000^(-2i / d_model) (the paper's, Marian's) or
// 10000^(-i / (d_model / 2 - 1)) (fairseq's: M2M100, NLLB).
enum class position_frequencies { paper, fairseq };

struct model_config {
  int d_model = 0, nhead = 0, num_encoder_layers = 0, num_decoder_layers = 0, dim_feedforward = 0;
  int src_vocab = 0, tgt_vocab = 0;
  bool norm_first = false, final_norm = true, scale_embedding = true;
  std::string activation = "relu"; // relu, gelu (exact erf form) or silu (swish)
  float layer_norm_eps = 1e-5f;
  position_layout positions = position_layout::interleaved;
  position_frequencies frequencies = position_frequencies::paper;
  int first_position = 0; // the position id of a sequence's first token (fairseq's: pad + 1)
  int max_positions = 0;  // the longest source or target a model takes (0: no limit)
  // bos_id starts decoding (Marian: its decoder_start_token_id, the pad).
  int pad_id = 0, bos_id = 1, eos_id = 2;
  std::vector<int> banned_ids; // never generated (Marian: the pad)
  bool forced_eos = false;     // the last step allowed by max_len emits eos_id (log P 0)
  // Beam search's rules (a hypothesis' length counts its EOS in both). halformer's:
  // an EOS candidate finishes while fewer than beam hypotheses have. transformers'
  // (generate() with early_stopping=True): only EOS candidates among the best beam
  // of the 2 x beam proposals finish, the best beam hypotheses by normalized score
  // are kept, and scores add up in float32.
  enum class beam_rules { halformer, transformers } beam = beam_rules::halformer;
  // Where the tensors lie: "halformer" (docs/model-format.md), "marian" (a Hugging
  // Face MarianMT directory), "m2m_100" (M2M100, NLLB) or "fsmt" (fairseq's
  // transformer); each has its table of tensor names.
  std::string format = "halformer";
  bool shared_embeddings = false; // one table for source and target tokens
  bool tied_output = false;       // the generator's weight is the target embedding table
  // Forced as the first generated token (generate's forced_bos_token_id: NLLB's and
  // M2M100's target language), with log-probability 0; -1: none.
  int forced_bos_id = -1;
  int d_k() const { return d_model / nhead; }
  // ln of pair i's frequency is -i times this (the embedding's frequency_step).
  double frequency_step() const;

  // Parses and validates JSON text; `where` names the source in messages.
  // Unknown keys are reported in `warnings`.
  static model_config parse(const std::string& text, const std::string& where, std::vector<std::string>* warnings);
  static model_config load(const std::string& path, std::vector<std::string>* warnings);
  // DIR/config.json of any format (a MarianMT directory has model_type "marian",
  // M2M100 and NLLB "m2m_100";
  // its generation_config.json, if present, adds the decoding rules).
  static model_config load_dir(const std::string& dir, std::vector<std::string>* warnings);
};

} // namespace halformer
