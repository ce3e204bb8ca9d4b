#include "weights.hpp"

#include "halformer/dsl/gemm_steps.hpp"
#include "halformer/weight_layout.hpp"

#include <algorithm>
#include <cmath>

namespace halformer {

quantized_rows quantize_rows(const std::vector<float>& w, int out, int in) {
  quantized_rows q;
  q.values.resize(w.size());
  q.steps.resize(std::size_t(out));
  for (int o = 0; o < out; ++o) {
    const float* row = w.data() + std::size_t(o) * in;
    float amax = 0;
    for (int i = 0; i < in; ++i)
      amax = std::max(amax, std::abs(row[i]));
    const float step = amax / 127.0f, inverse = step > 0 ? 1.0f / step : 0.0f;
    q.steps[std::size_t(o)] = step;
    for (int i = 0; i < in; ++i)
      q.values[std::size_t(o) * in + i] = int8_t(std::clamp(std::nearbyint(row[i] * inverse), -127.0f, 127.0f));
  }
  return q;
}

std::size_t model_weights::bytes() const {
  std::size_t n = 0;
  const auto add = [&](const layer_tensors& t) {
    for (const auto& [name, b] : t)
      n += b.number_of_elements() * b.type().bytes();
  };
  add(top);
  for (const auto* layers : {&encoder, &decoder})
    for (const auto& l : *layers)
      add(l);
  return n;
}

namespace {
// A GEMM weight in a kernel's layout from PyTorch's [out][in] rows: `dims` are the
// layout's extents, the dims marked in `is_input` index the input feature and the
// others the output (each flattened, its first dim fastest).
template <class T>
Halide::Runtime::Buffer<T> gemm_layout(const T* rows, std::vector<int> dims, const std::vector<bool>& is_input,
                                       int row_dims) {
  Halide::Runtime::Buffer<T> b = gemm_weight<T>(dims, row_dims);
  int in = 1;
  for (std::size_t d = 0; d < dims.size(); ++d)
    in *= is_input[d] ? dims[d] : 1;
  b.for_each_element([&](const int* pos) {
    std::size_t o = 0, i = 0, o_scale = 1, i_scale = 1;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      std::size_t& index = is_input[d] ? i : o;
      std::size_t& scale = is_input[d] ? i_scale : o_scale;
      index += std::size_t(pos[d]) * scale, scale *= std::size_t(dims[d]);
    }
    b(pos) = rows[o * std::size_t(in) + i];
  });
  return b;
}

// PyTorch [out][in] rows `w` quantized per row into the int8 layout `dims` (its
// first `inputs` dims index the input), under `name`, and their steps (the
// remaining dims) under dsl::layers::step_name(name).
void add_int8_rows(const std::vector<float>& w, const std::vector<int>& dims, int inputs, layer_tensors& into,
                   const std::string& name) {
  std::vector<bool> is_input(dims.size(), false);
  std::fill_n(is_input.begin(), inputs, true);
  int in = 1;
  for (int d = 0; d < inputs; ++d)
    in *= dims[std::size_t(d)];
  const quantized_rows q = quantize_rows(w, int(w.size() / std::size_t(in)), in);
  into[name] = gemm_layout(q.values.data(), dims, is_input, inputs);
  fbuffer steps(std::vector<int>(dims.begin() + inputs, dims.end()));
  std::copy(q.steps.begin(), q.steps.end(), steps.data());
  into[dsl::layers::step_name(name)] = steps;
}

// A GEMM weight `w` (PyTorch's [out][in] rows) of the model's type under `name`.
// The layouts, as the kernels take them: float32 `float_dims` (output dims
// first), int8 `int8_dims` (input dims first; add_int8_rows).
struct gemm_shape {
  std::vector<int> float_dims;
  int float_outputs; // leading dims of float_dims that index the output
  std::vector<int> int8_dims;
  int int8_inputs; // leading dims of int8_dims that index the input
};
void add_gemm_weight(const std::vector<float>& w, const gemm_shape& s, gemm_weights type, layer_tensors& into,
                     const std::string& name) {
  if (type == gemm_weights::int8) {
    add_int8_rows(w, s.int8_dims, s.int8_inputs, into, name);
    return;
  }
  std::vector<bool> is_input(s.float_dims.size(), true);
  std::fill_n(is_input.begin(), s.float_outputs, false);
  into[name] = gemm_layout(w.data(), s.float_dims, is_input, s.float_outputs);
}

fbuffer vector_of(const safetensors_file& f, const std::string& name, int n) {
  const auto v = f.read_f32(name, {n});
  fbuffer b(n);
  std::copy(v.begin(), v.end(), b.data());
  return b;
}

// nn.MultiheadAttention `prefix` (e.g. "...layers.0.self_attn") as "<as>.w_q" etc.
void attention_weights(const safetensors_file& f, const std::string& prefix, const std::string& as,
                       const model_config& c, gemm_weights type, layer_tensors& out) {
  const int d = c.d_model, dk = c.d_k(), H = c.nhead;
  const auto w = f.read_f32(prefix + ".in_proj_weight", {3 * d, d});
  const auto b = f.read_f32(prefix + ".in_proj_bias", {3 * d});
  const char* names[] = {"q", "k", "v"};
  for (int block = 0; block < 3; ++block) {
    const std::vector<float> rows(w.begin() + std::ptrdiff_t(block) * d * d,
                                  w.begin() + std::ptrdiff_t(block + 1) * d * d);
    add_gemm_weight(rows, {{dk, H, d}, 2, {d, dk, H}, 1}, type, out, as + ".w_" + names[block]);
    fbuffer bias(dk, H); // output h * d_k + j
    std::copy(b.begin() + std::ptrdiff_t(block) * d, b.begin() + std::ptrdiff_t(block + 1) * d, bias.data());
    out[as + ".b_" + names[block]] = bias;
  }
  // out_proj: input feature h * d_k + j.
  add_gemm_weight(f.read_f32(prefix + ".out_proj.weight", {d, d}), {{d, dk, H}, 1, {dk, H, d}, 2}, type, out,
                  as + ".w_o");
  out[as + ".b_o"] = vector_of(f, prefix + ".out_proj.bias", d);
}

void ffn_and_norms(const safetensors_file& f, const std::string& prefix, const model_config& c, int norms,
                   gemm_weights type, layer_tensors& out) {
  const int d = c.d_model, ff = c.dim_feedforward;
  add_gemm_weight(f.read_f32(prefix + "linear1.weight", {ff, d}), {{ff, d}, 1, {d, ff}, 1}, type, out,
                  "linear1.weight");
  out["linear1.bias"] = vector_of(f, prefix + "linear1.bias", ff);
  add_gemm_weight(f.read_f32(prefix + "linear2.weight", {d, ff}), {{d, ff}, 1, {ff, d}, 1}, type, out,
                  "linear2.weight");
  out["linear2.bias"] = vector_of(f, prefix + "linear2.bias", d);
  for (int n = 1; n <= norms; ++n) {
    const std::string norm = "norm" + std::to_string(n);
    out[norm + ".weight"] = vector_of(f, prefix + norm + ".weight", d);
    out[norm + ".bias"] = vector_of(f, prefix + norm + ".bias", d);
  }
}

// PyTorch [vocab][d_model] is already (d_model, vocab) in Halide order; int8
// tables are quantized per token's row, as a GEMM weight's output rows.
void embedding_table(const safetensors_file& f, const std::string& name, int vocab, int d, gemm_weights type,
                     layer_tensors& into, const std::string& as) {
  const auto e = f.read_f32(name, {vocab, d});
  if (type == gemm_weights::int8) {
    add_int8_rows(e, {d, vocab}, 1, into, as);
    return;
  }
  fbuffer b(d, vocab);
  std::copy(e.begin(), e.end(), b.data());
  into[as] = b;
}
} // namespace

model_weights model_weights::load(const safetensors_file& f, const model_config& c, gemm_weights type) {
  model_weights w;
  w.gemms = type;
  embedding_table(f, "src_embed.weight", c.src_vocab, c.d_model, type, w.top, "src_embed");
  embedding_table(f, "tgt_embed.weight", c.tgt_vocab, c.d_model, type, w.top, "tgt_embed");
  for (int l = 0; l < c.num_encoder_layers; ++l) {
    const std::string p = "transformer.encoder.layers." + std::to_string(l) + ".";
    layer_tensors t;
    attention_weights(f, p + "self_attn", "self_attn", c, type, t);
    ffn_and_norms(f, p, c, 2, type, t);
    w.encoder.push_back(std::move(t));
  }
  for (int l = 0; l < c.num_decoder_layers; ++l) {
    const std::string p = "transformer.decoder.layers." + std::to_string(l) + ".";
    layer_tensors t;
    attention_weights(f, p + "self_attn", "self_attn", c, type, t);
    attention_weights(f, p + "multihead_attn", "multihead_attn", c, type, t);
    ffn_and_norms(f, p, c, 3, type, t);
    w.decoder.push_back(std::move(t));
  }
  if (c.final_norm)
    for (const std::string part : {"encoder", "decoder"})
      for (const std::string v : {"weight", "bias"})
        w.top[part + "_norm." + v] = vector_of(f, "transformer." + part + ".norm." + v, c.d_model);
  add_gemm_weight(f.read_f32("generator.weight", {c.tgt_vocab, c.d_model}),
                  {{c.tgt_vocab, c.d_model}, 1, {c.d_model, c.tgt_vocab}, 1}, type, w.top, "generator.weight");
  w.top["generator.bias"] = vector_of(f, "generator.bias", c.tgt_vocab);
  return w;
}

} // namespace halformer
