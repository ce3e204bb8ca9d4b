#include "tensor_names.hpp"

#include "halformer/error.hpp"

#include <map>
#include <sstream>

namespace halformer {

namespace {
// A runtime name split at its dots: "decoder.3.cross_attn.q.weight".
std::vector<std::string> parts_of(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '.');)
    parts.push_back(p);
  return parts;
}

[[noreturn]] void unknown(const model_config& c, const std::string& name) {
  throw error("no " + c.format + " tensor is known for '" + name + "'");
}

// The names every format's layers share: a final norm ("encoder_norm.weight"),
// a layer's FFN ("encoder.0.fc1.weight"), a layer's prefix under `root`.
bool is_final_norm(const std::vector<std::string>& p) {
  return p.size() == 2 && (p[0] == "encoder_norm" || p[0] == "decoder_norm");
}
bool is_ffn(const std::vector<std::string>& p) { return p.size() == 4 && (p[2] == "fc1" || p[2] == "fc2"); }
std::string layer_of(const model_config& c, const std::string& name, const std::vector<std::string>& p,
                     const std::string& root) {
  if (p.size() < 4)
    unknown(c, name);
  return root + p[0] + ".layers." + p[1] + ".";
}

// halformer's own format: the state_dict of tools/export_torch.py's module
// (nn.Embedding src_embed/tgt_embed, a batch_first nn.Transformer, a generator).
tensor_source torch_transformer(const model_config& c, const std::string& name) {
  const auto p = parts_of(name);
  if (p.size() == 1 && (p[0] == "src_embed" || p[0] == "tgt_embed"))
    return {{p[0] + ".weight"}};
  if (p.size() == 2 && p[0] == "generator")
    return {{name}};
  if (is_final_norm(p))
    return {{"transformer." + p[0].substr(0, 7) + ".norm." + p[1]}};
  const std::string layer = layer_of(c, name, p, "transformer.");
  if (is_ffn(p))
    return {{layer + (p[2] == "fc1" ? "linear1." : "linear2.") + p[3]}};
  if (p.size() == 4 && p[2].rfind("norm", 0) == 0)
    return {{layer + p[2] + "." + p[3]}};
  if (p.size() != 5 || (p[2] != "self_attn" && p[2] != "cross_attn"))
    unknown(c, name);
  const std::string attn = layer + (p[2] == "self_attn" ? "self_attn." : "multihead_attn.");
  if (p[3] == "o")
    return {{attn + "out_proj." + p[4]}};
  // Q, K and V are row blocks of in_proj_weight [3 d_model, d_model] / in_proj_bias.
  const int block = p[3] == "q" ? 0 : p[3] == "k" ? 1 : p[3] == "v" ? 2 : -1;
  if (block < 0)
    unknown(c, name);
  const std::int64_t d = c.d_model;
  if (p[4] == "weight")
    return {{attn + "in_proj_weight"}, {3 * d, d}, int(block * d)};
  return {{attn + "in_proj_bias"}, {3 * d}, int(block * d)};
}

// A Hugging Face MarianMT checkpoint (transformers' MarianMTModel state_dict), or
// an M2M100ForConditionalGeneration one (M2M100, NLLB: the same names, one shared
// table, no final_logits_bias) or an FSMTForConditionalGeneration one (separate
// tables, an output_projection, no bias).
tensor_source marian(const model_config& c, const std::string& name) {
  const auto p = parts_of(name);
  const std::string shared = "model.shared.weight", enc = "model.encoder.embed_tokens.weight",
                    dec = "model.decoder.embed_tokens.weight";
  if (c.format == "fsmt" && name == "generator.weight") // FSMT's own output layer, or the target table
    return {c.tied_output ? std::vector<std::string>{dec, "model.decoder.output_projection.weight"}
                          : std::vector<std::string>{"model.decoder.output_projection.weight"}};
  const std::vector<std::string> tgt = c.shared_embeddings ? std::vector{shared, dec, enc} : std::vector{dec, shared};
  if (name == "src_embed")
    return {c.shared_embeddings ? std::vector{shared, enc, dec} : std::vector{enc, shared}};
  if (name == "tgt_embed") // separate tables: transformers makes the decoder's vocab_size rows
    return {tgt, {}, 0, !c.shared_embeddings};
  if (name == "generator.weight") {
    if (!c.tied_output)
      return {{"lm_head.weight"}};
    auto names = tgt;
    names.push_back("lm_head.weight");
    return {names};
  }
  if (name == "generator.bias")
    return {{"final_logits_bias"}, {1, c.tgt_vocab}, 0, false, c.format != "marian"};
  if (is_final_norm(p))
    return {{"model." + p[0].substr(0, 7) + ".layer_norm." + p[1]}};
  const std::string layer = layer_of(c, name, p, "model.");
  if (is_ffn(p))
    return {{layer + p[2] + "." + p[3]}};
  if (p.size() == 4 && p[2].rfind("norm", 0) == 0) {
    static const std::map<std::string, std::string> encoder{{"norm1", "self_attn_layer_norm"},
                                                            {"norm2", "final_layer_norm"}},
        decoder{{"norm1", "self_attn_layer_norm"}, {"norm2", "encoder_attn_layer_norm"}, {"norm3", "final_layer_norm"}};
    const auto& table = p[0] == "encoder" ? encoder : decoder;
    const auto it = table.find(p[2]);
    if (it == table.end())
      unknown(c, name);
    return {{layer + it->second + "." + p[3]}};
  }
  if (p.size() != 5 || (p[2] != "self_attn" && p[2] != "cross_attn") ||
      (p[3] != "q" && p[3] != "k" && p[3] != "v" && p[3] != "o"))
    unknown(c, name);
  const std::string attn = layer + (p[2] == "self_attn" ? "self_attn." : "encoder_attn.");
  return {{attn + (p[3] == "o" ? std::string("out") : p[3]) + "_proj." + p[4]}};
}
} // namespace

tensor_source tensor_source_of(const model_config& config, const std::string& name) {
  if (config.format == "halformer")
    return torch_transformer(config, name);
  if (config.format == "marian" || config.format == "m2m_100" || config.format == "fsmt")
    return marian(config, name);
  throw error("unknown model format '" + config.format + "'");
}

} // namespace halformer
