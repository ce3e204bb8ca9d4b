#include "weights.hpp"

#include "halformer/dsl/gemm_steps.hpp"
#include "halformer/dsl/panels.hpp"
#include "halformer/error.hpp"
#include "halformer/weight_layout.hpp"
#include "tensor_names.hpp"

#include <HalideRuntime.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <mutex>
#include <set>

namespace halformer {

namespace {
// Rounds half to even, as std::nearbyint in the default rounding mode, inline
// (nearbyint is a libm call unless the build targets SSE4.1: a third of an int8
// model's load): adding 1.5 x 2^23 leaves no bits for a fraction, which the
// addition rounds away, for any |v| < 2^22 (a quantized value is within 127.5).
float round_half_even(float v) {
  constexpr float shifter = 12582912.0f;
  return (v + shifter) - shifter;
}
} // namespace

quantized_row_steps row_steps(std::span<const float> w, int out, int in) {
  quantized_row_steps s;
  s.steps.resize(std::size_t(out));
  s.inverses.resize(std::size_t(out));
  for (std::size_t o = 0; o < std::size_t(out); ++o) {
    float amax = 0;
    for (float v : w.subspan(o * std::size_t(in), std::size_t(in)))
      amax = std::max(amax, std::abs(v));
    s.steps[o] = amax / 127.0f;
    s.inverses[o] = s.steps[o] > 0 ? 1.0f / s.steps[o] : 0.0f;
  }
  return s;
}

int8_t quantized_value(float w, float inverse) {
  return int8_t(std::clamp(round_half_even(w * inverse), -127.0f, 127.0f));
}

quantized_rows quantize_rows(std::span<const float> w, int out, int in) {
  const quantized_row_steps s = row_steps(w, out, in);
  quantized_rows q{std::vector<int8_t>(w.size()), s.steps};
  for (std::size_t i = 0; i < w.size(); ++i)
    q.values[i] = quantized_value(w[i], s.inverses[i / std::size_t(in)]);
  return q;
}

std::size_t model_weights::bytes() const {
  std::size_t n = 0;
  std::set<const void*> counted; // tied tensors share a buffer
  const auto add = [&](const layer_tensors& t) {
    for (const auto& [name, b] : t)
      if (counted.insert(b.data()).second)
        n += b.number_of_elements() * b.type().bytes();
  };
  add(top);
  for (const auto* layers : {&encoder, &decoder})
    for (const auto& l : *layers)
      add(l);
  return n;
}

namespace {
// Stored in panels (dsl/panels.hpp), as the int8 GEMM and embedding kernels read
// them: quantized as they are packed (quantize_rows' values without its copy),
// with each output's step and the sum of its int8 values (the GEMMs' zero-point
// correction, dsl::int8_contract), summed as they are quantized.
void add_int8_panels(std::span<const float> w, const std::vector<int>& dims, int inputs, layer_tensors& into,
                     const std::string& name) {
  int in = 1;
  for (int d = 0; d < inputs; ++d)
    in *= dims[std::size_t(d)];
  const quantized_row_steps q = row_steps(w, int(w.size() / std::size_t(in)), in);
  const std::vector<int> outputs(dims.begin() + inputs, dims.end());
  ibuffer sums(outputs);
  sums.fill(0);
  into[name] =
      dsl::panels::pack_rows<Halide::Runtime::Buffer<int8_t>>(w.data(), dims, inputs, [&](std::size_t row, float v) {
        const int8_t value = quantized_value(v, q.inverses[row]);
        sums.data()[row] += value;
        return value;
      });
  fbuffer steps(outputs);
  std::copy(q.steps.begin(), q.steps.end(), steps.data());
  into[dsl::layers::step_name(name)] = steps;
  into[dsl::layers::sums_name(name)] = sums;
}

// A GEMM weight `w` (PyTorch's [out][in] rows) of the model's type under `name`,
// in the dot-product layout `dims` (its first `inputs` dims index the input:
// PyTorch's rows as they are), as the kernels take it: in panels
// (dsl/panels.hpp; int8 with its steps, add_int8_panels; bfloat16 rounded to
// nearest even, halformer/weight_layout.hpp).
struct gemm_shape {
  std::vector<int> dims;
  int inputs; // leading dims of `dims` that index the input
};
void add_gemm_weight(std::span<const float> w, const gemm_shape& s, gemm_weights type, layer_tensors& into,
                     const std::string& name) {
  if (type == gemm_weights::int8) {
    add_int8_panels(w, s.dims, s.inputs, into, name);
    return;
  }
  if (type == gemm_weights::bfloat16) {
    into[name] = bf16_panels(w.data(), s.dims, s.inputs);
    return;
  }
  into[name] = dsl::panels::pack_rows<fbuffer>(w.data(), s.dims, s.inputs);
}

// The layout add_gemm_weight stores a weight of `type` in: a key of
// tensor_reader::repacked, so that one stored tensor is repacked once per layout.
const char* layout_name(gemm_weights type) {
  return type == gemm_weights::int8       ? "int8 panels"
         : type == gemm_weights::bfloat16 ? "bfloat16 panels"
                                          : "float32 panels";
}

// Reads the runtime's tensors (tensor_names.hpp) through the format's name table.
// Tensors stored once but used twice (tied embeddings) are repacked once per
// layout and held once: `repacked` hands out the same buffer again.
class tensor_reader {
public:
  tensor_reader(const safetensors_file& f, const model_config& c) : f_(f), c_(c) {}

  // The stored tensor `name` resolves to: the first of its names the file holds.
  std::string stored(const std::string& name) const {
    const tensor_source s = tensor_source_of(c_, name);
    for (const auto& n : s.names)
      if (f_.has(n))
        return n;
    std::string all;
    for (const auto& n : s.names)
      all += (all.empty() ? "'" : " or '") + n + "'";
    throw error("model is missing tensor " + all + " (" + name + ", " + f_.path() + ")");
  }

  // `name`'s values, checked to have `shape`: a view, valid until the next read.
  // Row blocks of one stored tensor come one after another (Q, K, V of an
  // in_proj): it is read once for all of them. Every tensor is read into one
  // buffer, kept between reads: a new one per tensor was faulted in page by
  // page and unmapped again (a sixth of an int8 model's page faults).
  std::span<const float> read(const std::string& name, const std::vector<std::int64_t>& shape) const {
    tensor_source s = tensor_source_of(c_, name);
    const std::string from = stored(name);
    if (s.leading_rows) { // as many rows as stored, if at least `shape[0]`
      const auto& stored_shape = f_.tensors().at(from).shape;
      s.stored_shape = shape;
      if (!stored_shape.empty() && stored_shape[0] > shape[0])
        s.stored_shape[0] = stored_shape[0];
    }
    if (read_name_ != from) {
      read_name_.clear(); // until read: a failed read leaves no stale name
      f_.read_f32(from, s.stored_shape.empty() ? shape : s.stored_shape, read_);
      read_name_ = from;
    }
    std::size_t n = 1, row = 1;
    for (std::size_t d = 0; d < shape.size(); ++d)
      n *= std::size_t(shape[d]), row *= d > 0 ? std::size_t(shape[d]) : 1;
    const std::size_t begin = std::size_t(s.first_row) * row;
    if (begin + n > read_.size())
      throw error("tensor '" + from + "' is too small to hold " + name);
    return std::span<const float>(read_).subspan(begin, n);
  }

  // The buffer of the last read, freed: after the largest tensors (the tables
  // and the generator), so that the load's peak memory holds it only while
  // they are repacked.
  void release() const {
    read_name_.clear();
    std::vector<float>().swap(read_);
  }

  fbuffer vector(const std::string& name, int n) const {
    fbuffer b(n);
    const tensor_source s = tensor_source_of(c_, name);
    if (s.zeros_if_absent && std::none_of(s.names.begin(), s.names.end(), [&](const auto& k) { return f_.has(k); })) {
      b.fill(0.0f);
      return b;
    }
    const auto v = read(name, {n});
    std::copy(v.begin(), v.end(), b.data());
    return b;
  }

  // Puts `name` repacked as `layout` (a key naming the layout) into `into` under
  // `as` (and its step and sums, for int8): repacked by `make` the first time, shared after.
  template <class Make>
  void repacked(const std::string& name, const std::string& layout, layer_tensors& into, const std::string& as,
                Make make) {
    const std::string key = stored(name) + " as " + layout;
    auto it = repacked_.find(key);
    if (it == repacked_.end()) {
      layer_tensors one;
      make(one);
      it = repacked_.emplace(key, std::move(one)).first;
    }
    for (const auto& [n, b] : it->second) // "<as>" and maybe its step and sums
      into[n == "" ? as : as + n] = b;
  }

  const model_config& config() const { return c_; }

private:
  const safetensors_file& f_;
  const model_config& c_;
  std::map<std::string, layer_tensors> repacked_; // by stored name and layout; "" the weight, else a suffix
  mutable std::string read_name_;                 // the stored tensor read_ holds
  mutable std::vector<float> read_;
};

// A layer's self- or cross-attention (`kind`) as "<as>.w_q" etc.
void attention_weights(const tensor_reader& r, const std::string& layer, const std::string& kind, const std::string& as,
                       gemm_weights type, layer_tensors& out) {
  const model_config& c = r.config();
  const int d = c.d_model, dk = c.d_k(), H = c.nhead;
  // The weights, then the biases: a fused in_proj is read once for each (tensor_reader).
  for (const std::string which : {"q", "k", "v"})
    add_gemm_weight(r.read(layer + kind + "." + which + ".weight", {d, d}), {{d, dk, H}, 1}, type, out,
                    as + ".w_" + which);
  for (const std::string which : {"q", "k", "v"}) {
    const auto b = r.read(layer + kind + "." + which + ".bias", {d});
    fbuffer bias(dk, H); // output h * d_k + j
    std::copy(b.begin(), b.end(), bias.data());
    out[as + ".b_" + which] = bias;
  }
  // The output projection's input feature is h * d_k + j.
  add_gemm_weight(r.read(layer + kind + ".o.weight", {d, d}), {{dk, H, d}, 2}, type, out, as + ".w_o");
  out[as + ".b_o"] = r.vector(layer + kind + ".o.bias", d);
}

void ffn_and_norms(const tensor_reader& r, const std::string& layer, int norms, gemm_weights type, layer_tensors& out) {
  const int d = r.config().d_model, ff = r.config().dim_feedforward;
  add_gemm_weight(r.read(layer + "fc1.weight", {ff, d}), {{d, ff}, 1}, type, out, "linear1.weight");
  out["linear1.bias"] = r.vector(layer + "fc1.bias", ff);
  add_gemm_weight(r.read(layer + "fc2.weight", {d, ff}), {{ff, d}, 1}, type, out, "linear2.weight");
  out["linear2.bias"] = r.vector(layer + "fc2.bias", d);
  for (int n = 1; n <= norms; ++n) {
    const std::string norm = "norm" + std::to_string(n);
    out[norm + ".weight"] = r.vector(layer + norm + ".weight", d);
    out[norm + ".bias"] = r.vector(layer + norm + ".bias", d);
  }
}

// PyTorch [vocab][d_model] is already (d_model, vocab) in Halide order, the
// dot-product layout of the generator's weight: a float32 table is stored in
// panels as that weight is (dsl/kernels.hpp: embedding), and a tied one is that
// weight's buffer, held once; int8 tables are quantized per token's row, as a
// GEMM weight's output rows, in panels as the generator's int8 weight; a
// bfloat16 model's tables are float32 panels.
void embedding_table(tensor_reader& r, const std::string& name, int vocab, gemm_weights type, layer_tensors& into) {
  // float32, or int8 with its steps, in panels (bfloat16 models keep float32
  // tables): a tied table is the generator's tensor in the generator's layout,
  // so `repacked` hands out the generator's buffers.
  const int d = r.config().d_model;
  const gemm_weights table = type == gemm_weights::int8 ? gemm_weights::int8 : gemm_weights::float32;
  r.repacked(name, layout_name(table), into, name, [&](layer_tensors& one) {
    add_gemm_weight(r.read(name, {vocab, d}), {{d, vocab}, 1}, table, one, "");
  });
}

// The generator's weight in panels (int8 with its steps), shared with the target
// table where tied (embedding_table) unless it is bfloat16.
void generator_weight(tensor_reader& r, gemm_weights type, layer_tensors& into) {
  const model_config& c = r.config();
  r.repacked("generator.weight", layout_name(type), into, "generator.weight", [&](layer_tensors& one) {
    add_gemm_weight(r.read("generator.weight", {c.tgt_vocab, c.d_model}), {{c.d_model, c.tgt_vocab}, 1}, type, one, "");
  });
}

// `count` jobs as one parallel loop of the kernels' thread pool (as many threads
// as halformer_set_num_threads gave it); the first exception a job throws is
// rethrown here once the loop has ended.
template <class Job> void run_jobs(std::size_t count, Job job) {
  struct loop {
    Job& job;
    std::exception_ptr failed;
    std::mutex failed_mutex;
  } state{job, nullptr, {}};
  const halide_task_t task = [](void*, int i, std::uint8_t* closure) {
    auto& l = *reinterpret_cast<loop*>(closure);
    try {
      l.job(std::size_t(i));
    } catch (...) {
      std::lock_guard<std::mutex> lock(l.failed_mutex);
      if (!l.failed)
        l.failed = std::current_exception();
    }
    return 0;
  };
  halide_do_par_for(nullptr, task, 0, int(count), reinterpret_cast<std::uint8_t*>(&state));
  if (state.failed)
    std::rethrow_exception(state.failed);
}

void encoder_layer(const tensor_reader& r, int l, gemm_weights type, layer_tensors& t) {
  const std::string layer = "encoder." + std::to_string(l) + ".";
  attention_weights(r, layer, "self_attn", "self_attn", type, t);
  ffn_and_norms(r, layer, 2, type, t);
}

void decoder_layer(const tensor_reader& r, int l, gemm_weights type, layer_tensors& t) {
  const std::string layer = "decoder." + std::to_string(l) + ".";
  attention_weights(r, layer, "self_attn", "self_attn", type, t);
  attention_weights(r, layer, "cross_attn", "multihead_attn", type, t);
  ffn_and_norms(r, layer, 3, type, t);
}
} // namespace

model_weights model_weights::load(const safetensors_file& f, const model_config& c, gemm_weights type) {
  model_weights w;
  w.gemms = type;
  tensor_reader r(f, c);
  embedding_table(r, "src_embed", c.src_vocab, type, w.top);
  embedding_table(r, "tgt_embed", c.tgt_vocab, type, w.top);
  generator_weight(r, type, w.top);
  r.release(); // the tables and the generator, the largest tensors, first
  // The layers in parallel, each with a reader of its own: a layer's reads,
  // quantization and packing touch only its own tensors and buffers.
  const auto encoders = std::size_t(c.num_encoder_layers);
  w.encoder.resize(encoders);
  w.decoder.resize(std::size_t(c.num_decoder_layers));
  run_jobs(w.encoder.size() + w.decoder.size(), [&](std::size_t i) {
    const tensor_reader own(f, c);
    if (i < encoders)
      encoder_layer(own, int(i), type, w.encoder[i]);
    else
      decoder_layer(own, int(i - encoders), type, w.decoder[i - encoders]);
  });
  if (c.final_norm)
    for (const std::string part : {"encoder_norm.", "decoder_norm."})
      for (const std::string v : {"weight", "bias"})
        w.top[part + v] = r.vector(part + v, c.d_model);
  w.top["generator.bias"] = r.vector("generator.bias", c.tgt_vocab);
  return w;
}

} // namespace halformer
