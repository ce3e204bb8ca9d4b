#include "weights.hpp"

#include "halformer/weight_layout.hpp"

namespace halformer {

namespace {
using shape = std::vector<std::int64_t>;

// PyTorch [out][in] (row-major) -> Halide (out, in), out innermost.
fbuffer linear_weight(const safetensors_file& f, const std::string& name, int out, int in) {
  const auto w = f.read_f32(name, {out, in});
  fbuffer b = gemm_weight({out, in}, 1);
  for (int i = 0; i < in; ++i)
    for (int o = 0; o < out; ++o)
      b(o, i) = w[std::size_t(o) * in + i];
  return b;
}

fbuffer vector_of(const safetensors_file& f, const std::string& name, int n) {
  const auto v = f.read_f32(name, {n});
  fbuffer b(n);
  for (int i = 0; i < n; ++i)
    b(i) = v[i];
  return b;
}

// Rows [block * d, (block + 1) * d) of in_proj_weight as (d_k, heads, d_model).
fbuffer head_weight(const std::vector<float>& in_proj, int block, const model_config& c) {
  const int d = c.d_model, dk = c.d_k();
  fbuffer b = gemm_weight({dk, c.nhead, d}, 2);
  for (int i = 0; i < d; ++i)
    for (int h = 0; h < c.nhead; ++h)
      for (int j = 0; j < dk; ++j)
        b(j, h, i) = in_proj[std::size_t(block * d + h * dk + j) * d + i];
  return b;
}
fbuffer head_bias(const std::vector<float>& in_bias, int block, const model_config& c) {
  fbuffer b(c.d_k(), c.nhead);
  for (int h = 0; h < c.nhead; ++h)
    for (int j = 0; j < c.d_k(); ++j)
      b(j, h) = in_bias[std::size_t(block * c.d_model + h * c.d_k() + j)];
  return b;
}

// nn.MultiheadAttention `prefix` (e.g. "...layers.0.self_attn") as "<as>.w_q" etc.
void attention_weights(const safetensors_file& f, const std::string& prefix, const std::string& as,
                       const model_config& c, layer_tensors& out) {
  const int d = c.d_model;
  const auto w = f.read_f32(prefix + ".in_proj_weight", {3 * d, d});
  const auto b = f.read_f32(prefix + ".in_proj_bias", {3 * d});
  const char* names[] = {"q", "k", "v"};
  for (int block = 0; block < 3; ++block) {
    out[as + ".w_" + names[block]] = head_weight(w, block, c);
    out[as + ".b_" + names[block]] = head_bias(b, block, c);
  }
  // out_proj: (d_model, d_k, heads) with input feature h * d_k + j.
  const auto wo = f.read_f32(prefix + ".out_proj.weight", {d, d});
  fbuffer o = gemm_weight({d, c.d_k(), c.nhead}, 1);
  for (int h = 0; h < c.nhead; ++h)
    for (int j = 0; j < c.d_k(); ++j)
      for (int r = 0; r < d; ++r)
        o(r, j, h) = wo[std::size_t(r) * d + h * c.d_k() + j];
  out[as + ".w_o"] = o;
  out[as + ".b_o"] = vector_of(f, prefix + ".out_proj.bias", d);
}

void ffn_and_norms(const safetensors_file& f, const std::string& prefix, const model_config& c, int norms,
                   layer_tensors& out) {
  out["linear1.weight"] = linear_weight(f, prefix + "linear1.weight", c.dim_feedforward, c.d_model);
  out["linear1.bias"] = vector_of(f, prefix + "linear1.bias", c.dim_feedforward);
  out["linear2.weight"] = linear_weight(f, prefix + "linear2.weight", c.d_model, c.dim_feedforward);
  out["linear2.bias"] = vector_of(f, prefix + "linear2.bias", c.d_model);
  for (int n = 1; n <= norms; ++n) {
    const std::string norm = "norm" + std::to_string(n);
    out[norm + ".weight"] = vector_of(f, prefix + norm + ".weight", c.d_model);
    out[norm + ".bias"] = vector_of(f, prefix + norm + ".bias", c.d_model);
  }
}

// PyTorch [vocab][d_model] is already (d_model, vocab) in Halide order.
fbuffer embedding_table(const safetensors_file& f, const std::string& name, int vocab, int d) {
  const auto e = f.read_f32(name, {vocab, d});
  fbuffer b(d, vocab);
  std::copy(e.begin(), e.end(), b.data());
  return b;
}
} // namespace

model_weights model_weights::load(const safetensors_file& f, const model_config& c) {
  model_weights w;
  w.src_embed = embedding_table(f, "src_embed.weight", c.src_vocab, c.d_model);
  w.tgt_embed = embedding_table(f, "tgt_embed.weight", c.tgt_vocab, c.d_model);
  for (int l = 0; l < c.num_encoder_layers; ++l) {
    const std::string p = "transformer.encoder.layers." + std::to_string(l) + ".";
    layer_tensors t;
    attention_weights(f, p + "self_attn", "self_attn", c, t);
    ffn_and_norms(f, p, c, 2, t);
    w.encoder.push_back(std::move(t));
  }
  for (int l = 0; l < c.num_decoder_layers; ++l) {
    const std::string p = "transformer.decoder.layers." + std::to_string(l) + ".";
    layer_tensors t;
    attention_weights(f, p + "self_attn", "self_attn", c, t);
    attention_weights(f, p + "multihead_attn", "multihead_attn", c, t);
    ffn_and_norms(f, p, c, 3, t);
    w.decoder.push_back(std::move(t));
  }
  if (c.final_norm) {
    w.encoder_norm_w = vector_of(f, "transformer.encoder.norm.weight", c.d_model);
    w.encoder_norm_b = vector_of(f, "transformer.encoder.norm.bias", c.d_model);
    w.decoder_norm_w = vector_of(f, "transformer.decoder.norm.weight", c.d_model);
    w.decoder_norm_b = vector_of(f, "transformer.decoder.norm.bias", c.d_model);
  }
  w.generator_w = linear_weight(f, "generator.weight", c.tgt_vocab, c.d_model);
  w.generator_b = vector_of(f, "generator.bias", c.tgt_vocab);
  return w;
}

} // namespace halformer
