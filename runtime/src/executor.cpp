#include "executor.hpp"

#include "halformer/dsl/layers.hpp"
#include "halformer/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace halformer {

namespace {
namespace layers = dsl::layers;

// Each kernel function's tensor arguments, in its C signature's order.
const std::map<std::string, std::vector<std::string>>& signatures() {
  static const std::map<std::string, std::vector<std::string>> s{
      {"qkv_projection", {"x", "w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "q", "k", "v"}},
      {"kv_projection", {"x", "w_k", "w_v", "b_k", "b_v", "k", "v"}},
      {"q_projection", {"x", "w_q", "b_q", "q"}},
      {"attention", {"q", "k", "v", "lengths", "out"}},
      {"out_projection", {"a", "w", "b", "residual", "out"}},
      {"ffn_relu", {"x", "residual", "w1", "b1", "w2", "b2", "out"}},
      {"ffn_gelu", {"x", "residual", "w1", "b1", "w2", "b2", "out"}},
      {"layernorm", {"x", "gamma", "beta", "out"}},
  };
  return s;
}

// Kernels take non-const halide_buffer_t* but do not write their inputs.
// Buffer::translate() without dropping a device crop (translate() does): an
// element's address, on the host or the device, is relative to the min corner,
// so shifting the mins renumbers the coordinates and changes nothing else.
void renumber(fbuffer& b, int d, int delta) { b.raw_buffer()->dim[d].min += delta; }

template <class T> halide_buffer_t* in(const Halide::Runtime::Buffer<T>& b) {
  return const_cast<Halide::Runtime::Buffer<T>&>(b).raw_buffer();
}

bool persistent(const std::string& name) {
  auto ends = [&](const char* s) {
    const std::size_t n = std::strlen(s);
    return name.size() >= n && name.compare(name.size() - n, n, s) == 0;
  };
  return ends("_cache") || ends("_memory");
}
} // namespace

namespace {
const halide_device_interface_t* interface_of(device d) {
  return d == device::cpu ? nullptr : halformer_device_interface(device_name(d));
}
void require_ok(int rc, const char* what, device d) {
  if (rc != 0)
    throw error(std::string(what) + " on " + device_name(d) + " failed (code " + std::to_string(rc) +
                "): " + halformer_last_error());
}
} // namespace

void executor::upload_weights(model_weights& w, device d) {
  const halide_device_interface_t* iface = interface_of(d);
  if (!iface)
    return;
  auto up = [&](fbuffer& b) {
    if (b.data() == nullptr)
      return; // absent (e.g. no final norm)
    b.set_host_dirty();
    require_ok(b.copy_to_device(iface), "uploading the weights", d);
  };
  for (fbuffer* b : {&w.src_embed, &w.tgt_embed, &w.encoder_norm_w, &w.encoder_norm_b, &w.decoder_norm_w,
                     &w.decoder_norm_b, &w.generator_w, &w.generator_b})
    up(*b);
  for (auto* layers : {&w.encoder, &w.decoder})
    for (auto& layer : *layers)
      for (auto& [name, b] : layer)
        up(b);
}

template <class B> void executor::upload(B& b) const {
  if (iface_) {
    b.set_host_dirty();
    require_ok(b.copy_to_device(iface_), "copying to the device", device_);
  }
}
template <class B> void executor::download(B& b) const {
  if (iface_) {
    b.set_device_dirty();
    require_ok(b.copy_to_host(), "copying from the device", device_);
  }
}
void executor::copy(fbuffer src, fbuffer dst) const {
  if (!iface_) {
    dst.copy_from(src);
    return;
  }
  require_ok(halide_buffer_copy(nullptr, src.raw_buffer(), iface_, dst.raw_buffer()), "copying on the device", device_);
  written(dst);
}
// A kernel left `view` device_dirty. The executor tracks where data is current
// itself (parents are never marked), so the flag is cleared: a view is temporary,
// and destroying a dirty one would be an error in Halide's Buffer.
void executor::written(fbuffer& view) { view.set_device_dirty(false); }

executor::executor(const model_config& c, const model_weights& w, device d)
    : config_(c), weights_(w), device_(d), k_(kernels_of(d)), iface_(interface_of(d)) {
  const auto enc = c.norm_first ? layers::flatten(layers::encoder_layer(dsl::hana::true_c, c.activation))
                                : layers::flatten(layers::encoder_layer(dsl::hana::false_c, c.activation));
  const auto dec = c.norm_first ? layers::flatten(layers::decoder_layer(dsl::hana::true_c, c.activation))
                                : layers::flatten(layers::decoder_layer(dsl::hana::false_c, c.activation));
  for (int l = 0; l < c.num_encoder_layers; ++l)
    encoder_.push_back(bind(enc, w.encoder[l], "encoder.", false));
  for (int l = 0; l < c.num_decoder_layers; ++l) {
    plan p = bind(dec, w.decoder[l], "decoder" + std::to_string(l) + ".", true);
    // Cross-attention keys/values depend on the source only: run once per source.
    auto kv = std::find_if(p.begin(), p.end(), [](const step& s) { return s.function == fn::kv_projection; });
    cross_.push_back(*kv);
    p.erase(kv);
    decoder_.push_back(std::move(p));
  }
}

fbuffer& executor::activation(const std::string& key, const std::vector<std::string>& dims, bool cache) {
  auto [it, fresh] = acts_.try_emplace(key);
  if (fresh) {
    act_dims_[key] = dims;
    if (cache)
      caches_.push_back(key);
  }
  return it->second;
}

executor::plan executor::bind(const std::vector<layers::flat_step>& steps, const layer_tensors& weights,
                              const std::string& scope, bool decoder) {
  plan p;
  for (const auto& s : steps) {
    static const std::map<std::string, fn> functions{{"qkv_projection", fn::qkv_projection},
                                                     {"kv_projection", fn::kv_projection},
                                                     {"q_projection", fn::q_projection},
                                                     {"attention", fn::attention},
                                                     {"out_projection", fn::out_projection},
                                                     {"ffn_relu", fn::ffn_relu},
                                                     {"ffn_gelu", fn::ffn_gelu},
                                                     {"layernorm", fn::layernorm}};
    step st{functions.at(s.function), s.function};
    for (const auto& [formal, value] : s.scalars) {
      if (formal == "causal")
        st.causal = value == "causal";
      if (formal == "offset")
        st.offset_is_position = value == "position";
    }
    for (const std::string& formal : signatures().at(s.function)) {
      auto o = std::find_if(s.operands.begin(), s.operands.end(), [&](const auto& x) { return x.formal == formal; });
      if (o == s.operands.end())
        throw error("layer description: " + s.function + " lacks operand " + formal);
      operand op{role::activation};
      if (auto w = weights.find(o->actual); w != weights.end()) {
        op.kind = role::weight;
        op.weight = &w->second;
      } else if (o->actual == "src_lengths" || o->actual == "tgt_lengths") {
        op.kind = role::lengths;
        op.lengths = o->actual == "src_lengths" ? &src_lengths_ : &tgt_lengths_;
      } else {
        const bool cache = decoder && o->actual.size() > 6 && o->actual.compare(o->actual.size() - 6, 6, "_cache") == 0;
        const bool keep = decoder && persistent(o->actual);
        op.kind = cache ? (o->is_output ? role::cache_write : role::cache_read) : role::activation;
        // Keys: per phase ("encoder.", "decoder."), and per decoder layer for what
        // persists across steps (caches, cross-attention keys and values).
        op.act =
            &activation((keep ? scope : std::string(decoder ? "decoder." : "encoder.")) + o->actual, o->dims, cache);
        for (std::size_t d = 0; d < o->dims.size(); ++d) {
          if (o->dims[d] == "src" || o->dims[d] == "tgt")
            op.seq_dim = int(d), op.seq_is_tgt = o->dims[d] == "tgt";
          if (o->dims[d] == "batch")
            op.batch_dim = int(d);
        }
      }
      st.args.push_back(op);
    }
    p.push_back(std::move(st));
  }
  return p;
}

void executor::reserve(int rows, int src_len, int tgt_len) {
  rows = std::max(rows, 1), src_len = std::max(src_len, 1), tgt_len = std::max(tgt_len, 1);
  if (rows <= rows_cap_ && src_len <= src_cap_ && tgt_len <= tgt_cap_)
    return;
  rows_cap_ = std::max(rows, rows_cap_), src_cap_ = std::max(src_len, src_cap_), tgt_cap_ = std::max(tgt_len, tgt_cap_);
  const auto extent = [&](const std::string& d) {
    if (d == "d_model")
      return config_.d_model;
    if (d == "d_k")
      return config_.d_k();
    if (d == "heads")
      return config_.nhead;
    if (d == "d_ff")
      return config_.dim_feedforward;
    if (d == "src")
      return src_cap_;
    if (d == "tgt")
      return tgt_cap_;
    if (d == "batch")
      return rows_cap_;
    throw error("no extent for dimension " + d);
  };
  for (auto& [key, buf] : acts_) {
    const auto& dims = act_dims_.at(key);
    std::vector<int> sizes;
    for (const auto& d : dims)
      sizes.push_back(extent(d));
    if (std::find(caches_.begin(), caches_.end(), key) != caches_.end())
      sizes = {config_.d_k(), config_.nhead, tgt_cap_, rows_cap_}; // storage (d_k, heads, position, batch)
    buf = fbuffer(sizes);
    buf.fill(0.0f);
    upload(buf);
  }
  const int d = config_.d_model, v = config_.tgt_vocab;
  src_lengths_ = ibuffer(rows_cap_), tgt_lengths_ = ibuffer(rows_cap_), vocab_lengths_ = ibuffer(rows_cap_);
  vocab_lengths_.fill(v);
  normed_ = fbuffer(d, tgt_cap_, rows_cap_);
  logits_ = fbuffer(v, tgt_cap_, rows_cap_);
  log_probs_ = fbuffer(v, tgt_cap_, rows_cap_);
  scratch_ = fbuffer(config_.d_k(), config_.nhead, tgt_cap_, rows_cap_);
  pick_ids_ = ibuffer(1, rows_cap_), pick_lp_ = fbuffer(1, rows_cap_);
  for (ibuffer* b : {&src_lengths_, &tgt_lengths_, &vocab_lengths_, &pick_ids_})
    upload(*b);
  upload(pick_lp_);
  for (fbuffer* b : {&normed_, &logits_, &log_probs_, &scratch_})
    upload(*b);
}

fbuffer executor::view(const operand& o) const {
  switch (o.kind) {
  case role::weight:
    return *o.weight;
  case role::lengths:
    return {}; // int32: passed separately (see run())
  case role::activation: {
    fbuffer b = *o.act;
    if (o.seq_dim >= 0)
      b.crop(o.seq_dim, 0, o.seq_is_tgt ? t_ : src_);
    if (o.batch_dim >= 0)
      b.crop(o.batch_dim, 0, rows_);
    return b;
  }
  case role::cache_write:
  case role::cache_read: {
    // Storage (d_k, heads, position, batch) seen as (d_k, position, heads, batch).
    const int first = o.kind == role::cache_write ? pos_ : 0;
    fbuffer b = o.act->cropped(2, first, pos_ + t_ - first).cropped(3, 0, rows_);
    b.transpose(1, 2);
    renumber(b, 1, -first); // kernels want min 0
    return b;
  }
  }
  return {};
}

// On a GPU, new cache positions (pos > 0) are written to a staging buffer and then
// copied into the cache: a kernel argument that starts inside an OpenCL buffer is
// a sub-buffer, whose offset must be aligned (CL_DEVICE_MEM_BASE_ADDR_ALIGN, up to
// 4 KiB), and a position's offset is not. Copies take any offset.
bool executor::staged(const operand& o) const { return iface_ && o.kind == role::cache_write && pos_ > 0; }

fbuffer executor::staging(const operand& o) {
  fbuffer& st = staging_[o.act];
  if (st.data() == nullptr || st.dim(1).extent() < t_ || st.dim(3).extent() < rows_cap_) {
    st = fbuffer(config_.d_k(), std::max(t_, 1), config_.nhead, rows_cap_); // grows rarely: t is 1 when decoding
    upload(st);
  }
  return st.cropped(1, 0, t_).cropped(3, 0, rows_);
}

void executor::check(int rc, const char* kernel) const {
  if (rc != 0)
    throw error(std::string("kernel ") + kernel + " failed (code " + std::to_string(rc) + ", rows " +
                std::to_string(rows_) + ", source " + std::to_string(src_) + ", target " + std::to_string(t_) +
                "): " + halformer_last_error());
}

void executor::run(const plan& p) {
  for (const step& s : p) {
    std::array<fbuffer, 10> a;
    for (std::size_t i = 0; i < s.args.size(); ++i)
      if (s.args[i].kind != role::lengths)
        a[i] = staged(s.args[i]) ? staging(s.args[i]) : view(s.args[i]);
    int rc = 0;
    switch (s.function) {
    case fn::qkv_projection:
      rc = k_.qkv_projection(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
      break;
    case fn::kv_projection:
      rc = k_.kv_projection(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
      break;
    case fn::q_projection:
      rc = k_.q_projection(a[0], a[1], a[2], a[3]);
      break;
    case fn::attention: {
      ibuffer lengths = s.args[3].lengths->cropped(0, 0, rows_);
      rc = k_.attention(a[0], a[1], a[2], lengths, s.causal, s.offset_is_position ? pos_ : 0, a[4]);
      break;
    }
    case fn::out_projection:
      rc = k_.out_projection(a[0], a[1], a[2], a[3], a[4]);
      break;
    case fn::ffn_relu:
      rc = k_.ffn_relu(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
      break;
    case fn::ffn_gelu:
      rc = k_.ffn_gelu(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
      break;
    case fn::layernorm:
      rc = k_.layernorm(a[0], a[1], a[2], config_.layer_norm_eps, a[3]);
      break;
    }
    if (iface_)
      for (std::size_t i = 0; i < s.args.size(); ++i)
        if (s.args[i].kind != role::lengths)
          written(a[i]);
    check(rc, s.name.c_str());
    for (std::size_t i = 0; i < s.args.size(); ++i)
      if (staged(s.args[i]))
        copy(a[i], view(s.args[i])); // the new positions into the cache
  }
}

void executor::encode(const ibuffer& ids, const ibuffer& lengths) {
  rows_ = ids.dim(1).extent(), src_ = ids.dim(0).extent(), t_ = 0, pos_ = 0;
  reserve(rows_, src_, 1);
  for (int r = 0; r < rows_; ++r)
    src_lengths_(r) = lengths(r);
  upload(src_lengths_);
  fbuffer& x = acts_.at("encoder.x");
  fbuffer xv = x.cropped(1, 0, src_).cropped(2, 0, rows_);
  const float scale = config_.scale_embedding ? std::sqrt(float(config_.d_model)) : 1.0f;
  if (iface_)
    const_cast<ibuffer&>(ids).set_host_dirty(); // a host buffer: its contents go up
  const int rc = k_.embedding(in(weights_.src_embed), in(ids), scale, 0, xv);
  written(xv);
  check(rc, "embedding (source)");
  for (const plan& p : encoder_)
    run(p);
  fbuffer mv = memory();
  if (config_.final_norm) {
    const int rc2 =
        k_.layernorm(xv, in(weights_.encoder_norm_w), in(weights_.encoder_norm_b), config_.layer_norm_eps, mv);
    written(mv);
    check(rc2, "layernorm (encoder final)");
  } else {
    copy(xv, mv);
  }
}

void executor::expand(int k) {
  if (k == 1)
    return;
  if (rows_ * k > rows_cap_)
    throw error("expand: reserve() was not given the beam rows");
  fbuffer& m = acts_.at("decoder.memory");
  download(m);
  const std::size_t row = std::size_t(config_.d_model) * src_;
  for (int r = rows_ - 1; r >= 0; --r)
    for (int j = k - 1; j >= 0; --j) {
      if (r * k + j != r)
        std::memcpy(&m(0, 0, r * k + j), &m(0, 0, r), row * sizeof(float));
      src_lengths_(r * k + j) = src_lengths_(r);
    }
  rows_ *= k;
  upload(m);
  upload(src_lengths_);
}

void executor::project_memory() { run(cross_); }

fbuffer executor::decode(const ibuffer& ids, int pos, bool logits_to_host) {
  t_ = ids.dim(0).extent(), pos_ = pos;
  if (ids.dim(1).extent() != rows_)
    throw error("decode: token rows differ from the encoded batch");
  if (pos + t_ > tgt_cap_)
    throw error("decode: position " + std::to_string(pos + t_) + " exceeds the reserved length");
  for (int r = 0; r < rows_; ++r)
    tgt_lengths_(r) = pos + t_;
  upload(tgt_lengths_);
  fbuffer& y = acts_.at("decoder.y");
  fbuffer yv = y.cropped(1, 0, t_).cropped(2, 0, rows_);
  const float scale = config_.scale_embedding ? std::sqrt(float(config_.d_model)) : 1.0f;
  if (iface_)
    const_cast<ibuffer&>(ids).set_host_dirty();
  int rc = k_.embedding(in(weights_.tgt_embed), in(ids), scale, pos, yv);
  written(yv);
  check(rc, "embedding (target)");
  for (const plan& p : decoder_)
    run(p);
  fbuffer nv = normed_.cropped(1, 0, t_).cropped(2, 0, rows_);
  if (config_.final_norm) {
    rc = k_.layernorm(yv, in(weights_.decoder_norm_w), in(weights_.decoder_norm_b), config_.layer_norm_eps, nv);
    written(nv);
    check(rc, "layernorm (decoder final)");
  } else {
    copy(yv, nv);
  }
  fbuffer lv = logits_.cropped(1, 0, t_).cropped(2, 0, rows_);
  rc = k_.logits(nv, in(weights_.generator_w), in(weights_.generator_b), lv);
  written(lv);
  check(rc, "logits");
  if (logits_to_host)
    download(lv);
  return lv;
}

fbuffer executor::log_probs() {
  fbuffer lv = logits_.cropped(1, 0, t_).cropped(2, 0, rows_);
  fbuffer pv = log_probs_.cropped(1, 0, t_).cropped(2, 0, rows_);
  ibuffer len = vocab_lengths_.cropped(0, 0, rows_);
  const int rc = k_.log_softmax(lv, len, false, 0, pv);
  written(pv);
  check(rc, "log_softmax");
  download(pv);
  return pv;
}

void executor::pick(const int*& ids, const float*& log_probs) {
  if (t_ != 1)
    throw error("pick: the last decode() ran " + std::to_string(t_) + " positions; greedy steps run one");
  fbuffer lv = logits_.cropped(1, 0, 1).cropped(2, 0, rows_); // (vocab, 1, rows)
  ibuffer iv = pick_ids_.cropped(1, 0, rows_);
  fbuffer pv = pick_lp_.cropped(1, 0, rows_);
  const int rc = k_.greedy_pick(lv, iv, pv);
  written(pv);
  if (iface_)
    iv.set_device_dirty(false);
  check(rc, "greedy_pick");
  download(iv);
  download(pv);
  ids = &iv(0, 0), log_probs = &pv(0, 0);
}

void executor::reorder_caches(const std::vector<int>& parent, int len) {
  if (iface_) { // row copies on the device, through the scratch buffer
    for (const std::string& key : caches_) {
      fbuffer& c = acts_.at(key);
      for (int r = 0; r < rows_; ++r) {
        fbuffer from = c.cropped(2, 0, len).cropped(3, parent[r], 1);
        renumber(from, 3, r - parent[r]); // copies match coordinates
        copy(from, scratch_.cropped(2, 0, len).cropped(3, r, 1));
      }
      for (int r = 0; r < rows_; ++r)
        copy(scratch_.cropped(2, 0, len).cropped(3, r, 1), c.cropped(2, 0, len).cropped(3, r, 1));
    }
    return;
  }
  const std::size_t row = std::size_t(config_.d_model) * len;
  for (const std::string& key : caches_) {
    fbuffer& c = acts_.at(key);
    // Storage (d_k, heads, position, batch): a row's first `len` positions are contiguous.
    for (int r = 0; r < rows_; ++r)
      std::memcpy(&scratch_(0, 0, 0, r), &c(0, 0, 0, parent[r]), row * sizeof(float));
    for (int r = 0; r < rows_; ++r)
      std::memcpy(&c(0, 0, 0, r), &scratch_(0, 0, 0, r), row * sizeof(float));
  }
}

// The decoder layers read the encoder output as the activation "memory".
fbuffer executor::memory() const { return acts_.at("decoder.memory").cropped(1, 0, src_).cropped(2, 0, rows_); }
fbuffer executor::memory_on_host() {
  fbuffer m = memory();
  download(m);
  return m;
}

} // namespace halformer
