#include "halformer/model.hpp"

#include "beam_search.hpp"
#include "decode_rules.hpp"
#include "devices.hpp"
#include "executor.hpp"
#include "executor_pool.hpp"
#include "kernel_memory.hpp"

#include <HalideRuntimeOpenCL.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace halformer {

struct Model::impl {
  model_config config;
  std::vector<std::string> warnings;
  load_options options;
  model_weights weights;
  halformer::device device = halformer::device::cpu;
  kv_type kv = kv_type::float32;
  std::unique_ptr<executor_pool> pool; // translate(), encode(), forward(): one executor per call
  std::unique_ptr<executor> session;   // begin() and decode_step()'s
  int position = 0;                    // next decode_step's position
  ibuffer step_ids;                    // (1, rows), sized by begin()
  std::unique_ptr<profiler> prof;      // while profiling
};

namespace {
// "float32", "int8", "bfloat16" or "auto" on device `d` -> the GEMMs' weight type.
gemm_weights select_compute_type(const std::string& name, device d) {
  if (name == "float32")
    return gemm_weights::float32;
  if (name == "int8")
    return gemm_weights::int8;
  if (name == "auto")
    return d == device::cpu ? gemm_weights::int8 : gemm_weights::float32;
  if (name == "bfloat16") {
    if (d != device::cpu)
      throw error(std::string("compute type bfloat16 runs on the CPU only (no GPU bfloat16 kernels); use float32 on ") +
                  device_name(d));
#if defined(__aarch64__)
    throw error("compute type bfloat16 needs bfloat16 dot products, which halformer's AArch64 kernels do not have "
                "(ARMv8.6-A BFDOT is not used); use float32 or int8");
#else
    if (!halformer_cpu_supports("avx512_vnni"))
      throw error("compute type bfloat16 needs AVX-512 BF16 (vdpbf16ps, with the rest of Halide's avx512_zen4 set: "
                  "VNNI, VBMI2, BITALG), which this CPU lacks; use float32 or int8");
#endif
    return gemm_weights::bfloat16;
  }
  throw error("unknown compute type '" + name + "' (expected float32, int8, bfloat16 or auto)");
}

// "float32", "float16" or "auto" -> the decoder's key and value type on device `d`.
kv_type select_kv_cache(const std::string& name, device d, gemm_weights gemms) {
  if (name == "auto")
    return default_kv(d, gemms);
  if (name == "float32")
    return kv_type::float32;
  if (name != "float16")
    throw error("unknown kv cache type '" + name + "' (expected float32, float16 or auto)");
  if (d != device::cpu)
    throw error(std::string("float16 keys and values run on the CPU only (no GPU float16 kernels); use float32 on ") +
                device_name(d));
  return kv_type::float16;
}

// "cpu", "cuda", "opencl" or "auto" -> a usable device. A named GPU that is not
// usable is an error; "auto" takes CUDA, else an OpenCL GPU, else the CPU, and
// says why in the warnings.
device select_device(const std::string& name, std::vector<std::string>& warnings) {
  if (name == "cpu")
    return device::cpu;
  if (name != "auto" && name != "cuda" && name != "opencl")
    throw error("unknown device '" + name + "' (expected cpu, cuda, opencl or auto)");
#if HALFORMER_GPU
  if (name == "cuda" || name == "opencl") {
    if (!halformer_device_available(name.c_str()))
      throw error(std::string("device ") + name + ": " + halformer_last_error());
    return name == "cuda" ? device::cuda : device::opencl;
  }
  if (halformer_device_available("cuda"))
    return device::cuda;
  std::string why = std::string("device auto: ") + halformer_last_error();
  // OpenCL only on a GPU: an OpenCL CPU device (PoCL) is slower than the CPU kernels.
  halide_opencl_set_device_type("gpu");
  const bool opencl_gpu = halformer_device_available("opencl");
  if (opencl_gpu)
    return device::opencl;
  halide_opencl_set_device_type(nullptr);
  warnings.push_back(why + "; no OpenCL GPU (" + halformer_last_error() + "); running on the CPU");
  return device::cpu;
#else
  if (name != "auto")
    throw error("device " + name + ": this build has no GPU kernels (HALFORMER_GPU=OFF)");
  warnings.push_back("device auto: this build has no GPU kernels; running on the CPU");
  return device::cpu;
#endif
}

// A model with a last position (Marian's max_position_embeddings) takes no longer
// source or target: the load options' maxima are cut to it, and a longer one is an
// error naming it.
void check_positions(const model_config& c, load_options& o) {
  if (c.max_positions <= 0)
    return;
  o.max_source_length = std::min(o.max_source_length, c.max_positions);
  o.max_target_length = std::min(o.max_target_length, c.max_positions);
}
} // namespace

Model::Model(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

const model_config& Model::config() const { return impl_->config; }
const std::vector<std::string>& Model::warnings() const { return impl_->warnings; }
std::string Model::device() const { return device_name(impl_->device); }
std::string Model::kv_cache() const { return impl_->kv == kv_type::float16 ? "float16" : "float32"; }
std::string Model::compute_type() const {
  const gemm_weights g = impl_->weights.gemms;
  return g == gemm_weights::int8 ? "int8" : g == gemm_weights::bfloat16 ? "bfloat16" : "float32";
}
std::size_t Model::weight_bytes() const { return impl_->weights.bytes(); }

std::vector<std::string> Model::kernels() const {
  const layer_descriptions d = layer_descriptions::of(impl_->config, impl_->weights.gemms, impl_->kv);
  std::vector<std::string> lines, seen;
  for (const auto* phase : {&d.encoder_input, &d.encoder, &d.encoder_output, &d.decoder_input, &d.decoder,
                            &d.decoder_output, &d.pick, &d.candidates})
    for (const auto& step : *phase) {
      if (std::find(seen.begin(), seen.end(), step.function) != seen.end())
        continue;
      seen.push_back(step.function);
      std::string line = step.function + ":";
      for (const auto& a : dsl::kernels::interface_of(step.function).inputs)
        line += " " + a.name + " " + dsl::dtype_name(a.type);
      lines.push_back(line);
    }
  return lines;
}

Model Model::load(const std::string& dir, const load_options& options) {
  if (halformer_kernels_init() != 0)
    throw error(halformer_last_error());
  kernel_memory::install();
  if (options.threads < 0)
    throw error("threads must be >= 0 (0: all cores), not " + std::to_string(options.threads));
  if (options.max_batch < 1)
    throw error("max_batch must be >= 1");
  if (options.max_source_length < 1 || options.max_target_length < 1)
    throw error("maximum lengths must be >= 1");
  if (halformer_set_num_threads(options.threads) != 0) // 0: all cores
    throw error("threads must be at most 256, not " + std::to_string(options.threads));
  auto p = std::make_unique<impl>();
  p->options = options;
  p->config = model_config::load_dir(dir, &p->warnings);
  p->device = select_device(options.device, p->warnings);
  const gemm_weights gemms = select_compute_type(options.compute_type, p->device);
  p->kv = select_kv_cache(options.kv_cache, p->device, gemms);
  check_positions(p->config, p->options);
  safetensors_file file(dir + "/model.safetensors");
  p->weights = model_weights::load(file, p->config, gemms);
  executor::upload_weights(p->weights, p->device);
  p->pool = std::make_unique<executor_pool>(p->config, p->weights, p->device, p->kv);
  p->session = std::make_unique<executor>(p->config, p->weights, p->device, p->kv);
  return Model(std::move(p));
}

namespace {
// Validates token ids and builds the padded (len, rows) id buffer and lengths.
void pack(const std::vector<sentence>& rows, int vocab, int pad, int max_len, const char* what, ibuffer& ids,
          ibuffer& lengths, const model_config& c) {
  if (rows.empty())
    throw error(std::string(what) + ": empty batch");
  std::size_t longest = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].empty())
      throw error(std::string(what) + " " + std::to_string(i) + " is empty");
    if (int(rows[i].size()) > max_len)
      throw error(std::string(what) + " " + std::to_string(i) + " has " + std::to_string(rows[i].size()) +
                  " tokens, more than the maximum " + limit_text(c, max_len));
    for (std::size_t j = 0; j < rows[i].size(); ++j)
      if (rows[i][j] < 0 || rows[i][j] >= vocab)
        throw error(std::string(what) + " " + std::to_string(i) + ", position " + std::to_string(j) + ": token id " +
                    std::to_string(rows[i][j]) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    longest = std::max(longest, rows[i].size());
  }
  ids = ibuffer(int(longest), int(rows.size()));
  lengths = ibuffer(int(rows.size()));
  ids.fill(pad);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t j = 0; j < rows[i].size(); ++j)
      ids(int(j), int(i)) = rows[i][j];
    lengths(int(i)) = int(rows[i].size());
  }
}

// A (possibly cropped, non-dense) buffer's elements, dim 0 fastest, into `out`.
void dense(const fbuffer& b, std::vector<float>& out) {
  out.resize(b.number_of_elements());
  std::size_t i = 0;
  b.for_each_value([&](float v) { out[i++] = v; });
}
std::vector<float> dense(const fbuffer& b) {
  std::vector<float> out;
  dense(b, out);
  return out;
}

// Rows padded with pad_id at the end (the forward() contract) -> unpadded rows.
std::vector<sentence> strip_padding(const std::vector<sentence>& rows, int pad, const char* what) {
  std::vector<sentence> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    sentence s = rows[i];
    while (!s.empty() && s.back() == pad)
      s.pop_back();
    for (std::size_t j = 0; j < s.size(); ++j)
      if (s[j] == pad)
        throw error(std::string(what) + " row " + std::to_string(i) + ": pad_id at position " + std::to_string(j) +
                    " before real tokens (padding must come last)");
    out.push_back(std::move(s));
  }
  return out;
}
} // namespace

std::vector<std::vector<float>> Model::encode(const std::vector<sentence>& sources) {
  ibuffer ids, lengths;
  pack(sources, impl_->config.src_vocab, impl_->config.pad_id, impl_->options.max_source_length, "source", ids, lengths,
       impl_->config);
  const auto e = impl_->pool->acquire(impl_->prof.get());
  e->reserve({int(sources.size()), ids.dim(0).extent(), 1});
  e->encode(ids, lengths);
  fbuffer m = e->memory_on_host();
  std::vector<std::vector<float>> out(sources.size());
  for (std::size_t b = 0; b < sources.size(); ++b)
    out[b].assign(&m(0, 0, int(b)), &m(0, 0, int(b)) + std::size_t(m.dim(0).extent()) * m.dim(1).extent());
  return out;
}

void Model::begin(const std::vector<sentence>& sources) {
  ibuffer ids, lengths;
  pack(sources, impl_->config.src_vocab, impl_->config.pad_id, impl_->options.max_source_length, "source", ids, lengths,
       impl_->config);
  executor& e = *impl_->session;
  e.reserve({int(sources.size()), ids.dim(0).extent(), impl_->options.max_target_length});
  e.encode(ids, lengths);
  e.project_memory();
  impl_->position = 0;
  impl_->step_ids = ibuffer(1, int(sources.size()));
}

std::vector<float> Model::decode_step(const std::vector<int>& tokens) {
  std::vector<float> logits;
  decode_step(tokens, logits);
  return logits;
}

void Model::decode_step(const std::vector<int>& tokens, std::vector<float>& logits) {
  executor& e = *impl_->session;
  if (impl_->step_ids.data() == nullptr)
    throw error("decode_step: call begin() first");
  if (int(tokens.size()) != e.rows())
    throw error("decode_step: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(e.rows()) +
                " sentences");
  ibuffer& ids = impl_->step_ids;
  for (int r = 0; r < e.rows(); ++r) {
    if (tokens[r] < 0 || tokens[r] >= impl_->config.tgt_vocab)
      throw error("decode_step: token id " + std::to_string(tokens[r]) + " of sentence " + std::to_string(r) +
                  " is outside the target vocabulary");
    ids(0, r) = tokens[r];
  }
  dense(e.decode(ids, impl_->position++), logits);
}

void Model::forward(const std::vector<sentence>& src, const std::vector<sentence>& tgt, std::vector<float>& logits,
                    std::vector<float>* memory) {
  const model_config& c = impl_->config;
  if (src.size() != tgt.size())
    throw error("forward: " + std::to_string(src.size()) + " source rows but " + std::to_string(tgt.size()) +
                " target rows");
  if (src.empty())
    throw error("forward: empty batch");
  const std::size_t src_len = src[0].size(), tgt_len = tgt[0].size();
  for (std::size_t i = 0; i < src.size(); ++i)
    if (src[i].size() != src_len || tgt[i].size() != tgt_len)
      throw error("forward: row " + std::to_string(i) + " is not as long as row 0 (rows must be padded)");
  ibuffer src_ids, src_lengths, tgt_ids, tgt_lengths;
  pack(strip_padding(src, c.pad_id, "source"), c.src_vocab, c.pad_id, impl_->options.max_source_length, "source",
       src_ids, src_lengths, impl_->config);
  // The target is decoded teacher-forced as given, padding included (as PyTorch).
  pack(tgt, c.tgt_vocab, c.pad_id, impl_->options.max_target_length, "target", tgt_ids, tgt_lengths, impl_->config);
  // Keep the padded source width: outputs are [batch][src_len][...].
  ibuffer ids(int(src_len), int(src.size()));
  ids.fill(c.pad_id);
  for (int b = 0; b < ids.dim(1).extent(); ++b)
    for (int j = 0; j < src_lengths(b); ++j)
      ids(j, b) = src_ids(j, b);
  const auto leased = impl_->pool->acquire(impl_->prof.get());
  executor& e = *leased;
  e.reserve({int(src.size()), int(src_len), int(tgt_len), int(tgt_len)});
  e.encode(ids, src_lengths);
  e.project_memory();
  logits = dense(e.decode(tgt_ids, 0)); // (vocab, t, batch) is [batch][t][vocab]
  if (memory)
    *memory = dense(e.memory_on_host());
}

void Model::check_options(const decode_options& o, std::size_t sources) const {
  check_decode_options(o, sources, impl_->config, impl_->options.max_target_length);
}

std::vector<std::vector<hypothesis>>
Model::translate(const std::vector<sentence>& sources, const decode_options& o,
                 const std::function<void(std::size_t, const std::vector<hypothesis>&)>& on_done) {
  check_options(o, sources.size());
  decode_options resolved = o;
  if (!resolved.seed)
    resolved.seed = std::random_device{}() * 0x100000001ull ^ std::random_device{}();
  std::vector<std::vector<hypothesis>> results(sources.size());
  const auto leased = impl_->pool->acquire(impl_->prof.get());
  const std::size_t per_batch = std::max(1, impl_->options.max_batch / o.beam);
  for (std::size_t first = 0; first < sources.size(); first += per_batch) {
    const std::size_t n = std::min(per_batch, sources.size() - first);
    std::vector<sentence> chunk(sources.begin() + first, sources.begin() + first + n);
    for (sentence& source : chunk)
      if (o.max_input_length > 0 && int(source.size()) > o.max_input_length)
        source.resize(std::size_t(o.max_input_length));
    ibuffer ids, lengths;
    pack(chunk, impl_->config.src_vocab, impl_->config.pad_id, impl_->options.max_source_length, "source", ids, lengths,
         impl_->config);
    beam_search(*leased, impl_->config, ids, lengths, resolved, first, [&](std::size_t i, std::vector<hypothesis> h) {
      results[first + i] = std::move(h);
      if (on_done)
        on_done(first + i, results[first + i]);
    });
  }
  return results;
}

void Model::set_profiling(bool on) {
  impl_->prof = on ? std::make_unique<profiler>() : nullptr;
  impl_->session->set_profiler(impl_->prof.get());
}
const run_profile& Model::profile() const {
  static const run_profile none;
  return impl_->prof ? impl_->prof->profile() : none;
}

std::string Model::kernel_info() {
  if (halformer_kernels_init() != 0)
    throw error(halformer_last_error());
  std::string s = "kernel ISA: ";
  s += halformer_active_isa();
  s += " (compiled: amx and avx512_vnni for the int8 and bfloat16 GEMMs, avx512, avx2, sse41; HALFORMER_ISA forces "
       "one)\nCPU supports:";
  for (const char* isa : {"amx", "avx512_vnni", "avx512", "avx2", "sse41"})
    if (halformer_cpu_supports(isa))
      s += std::string(" ") + isa;
#if HALFORMER_GPU
  s += "\nGPU kernels: cuda (PTX for sm_86, sm_80, sm_70), opencl";
  for (const char* api : {"cuda", "opencl"}) {
    s += std::string("\n  ") + api + ": ";
    if (halformer_device_available(api))
      s += api == std::string("cuda")
               ? "usable (compute capability " + std::to_string(halformer_cuda_capability()) + ")"
               : std::string("usable");
    else
      s += halformer_last_error();
  }
#else
  s += "\nGPU kernels: not built (HALFORMER_GPU=OFF)";
#endif
  return s;
}

} // namespace halformer
