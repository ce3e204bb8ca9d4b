#include "executor.hpp"

#include "halformer/dsl/layers.hpp"
#include "halformer/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace halformer {

namespace {
namespace layers = dsl::layers;

// Buffer::translate() without dropping a device crop (translate() does): an
// element's address, on the host or the device, is relative to the min corner,
// so shifting the mins renumbers the coordinates and changes nothing else.
void renumber(abuffer& b, int d, int delta) { b.raw_buffer()->dim[d].min += delta; }

// The k rows of each source as k positions of one batch row: (.., t = 1, .., rows)
// becomes (.., t = k, .., rows / k), the same memory (a position steps one row).
void group_rows(abuffer& b, int seq_dim, int batch_dim, int k) {
  halide_dimension_t& t = b.raw_buffer()->dim[seq_dim];
  halide_dimension_t& batch = b.raw_buffer()->dim[batch_dim];
  t.min = 0, t.extent = k, t.stride = batch.stride;
  batch.extent /= k, batch.stride *= k;
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
  const auto up = [&](layer_tensors& tensors) {
    for (auto& [name, b] : tensors) {
      b.set_host_dirty();
      require_ok(b.copy_to_device(iface), "uploading the weights", d);
    }
  };
  up(w.top);
  for (auto* layers : {&w.encoder, &w.decoder})
    for (auto& layer : *layers)
      up(layer);
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
template void executor::upload(ibuffer&) const; // for executor_rows.cpp and executor_sampling.cpp
template void executor::upload(abuffer&) const;
void executor::copy(abuffer src, abuffer dst) const {
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
void executor::written(abuffer& view) { view.set_device_dirty(false); }

void executor::reserve(const capacity& c) {
  const int rows = std::max(c.rows, 1), src_len = std::max(c.src_len, 1), tgt_len = std::max(c.tgt_len, 1);
  const int call_len = std::clamp(c.call_len, 1, tgt_len), sources = c.sources > 0 ? std::min(c.sources, rows) : rows;
  if (rows <= rows_cap_ && src_len <= src_cap_ && tgt_len <= tgt_cap_ && call_len <= call_cap_ &&
      sources <= sources_cap_)
    return;
  rows_cap_ = std::max(rows, rows_cap_), src_cap_ = std::max(src_len, src_cap_), tgt_cap_ = std::max(tgt_len, tgt_cap_);
  call_cap_ = std::max(call_len, call_cap_), sources_cap_ = std::max(sources, sources_cap_);
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
      return call_cap_; // the caches' positions are tgt_cap_ (below)
    if (d == "batch")
      return rows_cap_;
    if (d == "vocab")
      return config_.tgt_vocab;
    if (d == "chunk")
      return (config_.tgt_vocab + dsl::kernels::beam_candidates::chunk - 1) / dsl::kernels::beam_candidates::chunk;
    throw error("no extent for dimension " + d);
  };
  for (auto& [key, buf] : acts_) {
    const auto& dims = act_dims_.at(key);
    std::vector<int> sizes;
    for (const auto& d : dims)
      sizes.push_back(d == "batch" && per_source_batch(key, buf) ? sources_cap_ : extent(d));
    if (std::find(caches_.begin(), caches_.end(), key) != caches_.end())
      sizes = {config_.d_k(), tgt_cap_, config_.nhead, rows_cap_}; // (d_k, position, heads, batch)
    buf = abuffer(act_types_.at(key), sizes);
    std::memset(buf.data(), 0, buf.size_in_bytes()); // zero in every element type
    upload(buf);
  }
  src_lengths_ = ibuffer(rows_cap_), tgt_lengths_ = ibuffer(rows_cap_), vocab_lengths_ = ibuffer(rows_cap_);
  vocab_lengths_.fill(config_.tgt_vocab);
  src_rows_ = ibuffer(src_cap_, rows_cap_), tgt_rows_ = ibuffer(tgt_cap_, rows_cap_);
  // Identity tables: every key in its query's own row (decode() keeps tgt_rows_).
  src_rows_.for_each_element([&](int key, int row) { src_rows_(key, row) = row; });
  tgt_rows_.for_each_element([&](int key, int row) { tgt_rows_(key, row) = row; });
  old_tgt_rows_.assign(std::size_t(tgt_cap_) * std::size_t(rows_cap_), 0);
  pick_ids_ = ibuffer(1, rows_cap_), pick_lp_ = fbuffer(1, rows_cap_);
  sample_draws_ = fbuffer(1, rows_cap_), sample_forced_ = ibuffer(1, rows_cap_);
  sample_banned_ = ibuffer(1, 1, rows_cap_), sample_penalized_ = ibuffer(1, 1, rows_cap_);
  for (ibuffer* b : {&src_lengths_, &tgt_lengths_, &vocab_lengths_, &pick_ids_, &src_rows_, &tgt_rows_})
    upload(*b);
  upload(pick_lp_);
}

abuffer executor::view(const operand& o, bool grouped) const {
  if (o.kind == role::cache) {
    // (d_k, position, heads, batch): a head's keys are contiguous, so a decode
    // step's attention streams them; a step writes positions pos .. pos + t - 1
    // of its rows and reads 0 .. pos + t - 1 of any row, through tgt_rows_ (a
    // beam's rows share their prefixes).
    if (!o.is_output)
      return o.act->cropped(1, 0, pos_ + t_);
    abuffer b = o.act->cropped(1, pos_, t_).cropped(3, 0, rows_);
    renumber(b, 1, -pos_); // kernels want min 0
    return b;
  }
  abuffer b = *o.act; // an activation or per-source tensor
  if (o.seq_dim >= 0)
    b.crop(o.seq_dim, 0, o.seq_is_tgt ? t_ : src_);
  if (o.batch_dim >= 0)
    b.crop(o.batch_dim, 0, from_source(o.kind) ? sources() : rows_);
  if (grouped && o.kind == role::activation && o.seq_dim >= 0 && o.batch_dim >= 0)
    group_rows(b, o.seq_dim, o.batch_dim, group_);
  return b;
}

executor::scalar_value executor::scalar(const operand& o) const {
  const double v = o.kind == role::position         ? pos_
                   : o.kind == role::decode_step    ? double(t_ == 1) // one position per hypothesis (beams as queries)
                   : o.kind == role::own_rows       ? double(o.table == &src_rows_ || tgt_rows_own_)
                   : o.kind == role::layer_norm_eps ? config_.layer_norm_eps
                   : o.kind == role::embedding_scale
                       ? (config_.scale_embedding ? std::sqrt(double(config_.d_model)) : 1.0)
                   : o.kind == role::split_positions ? double(config_.positions == position_layout::split)
                   : o.kind == role::frequency_step  ? config_.frequency_step()
                   : o.kind == role::first_position  ? config_.first_position
                   : o.kind == role::target_position ? pos_ + config_.first_position
                   : o.kind == role::decode_option   ? *o.option
                                                     : o.value;
  scalar_value s{};
  if (o.type.code == halide_type_float)
    s.f32 = float(v);
  else if (o.type.bits == 1)
    s.boolean = v != 0;
  else
    s.i32 = int32_t(v);
  return s;
}

// On a GPU, new cache positions (pos > 0) are written to a staging buffer and then
// copied into the cache: a kernel argument that starts inside an OpenCL buffer is
// a sub-buffer, whose offset must be aligned (CL_DEVICE_MEM_BASE_ADDR_ALIGN, up to
// 4 KiB), and a position's offset is not. Copies take any offset.
bool executor::staged(const operand& o) const { return iface_ && o.kind == role::cache && o.is_output && pos_ > 0; }

abuffer executor::staging(const operand& o) {
  abuffer& st = staging_[o.act];
  if (st.data() == nullptr || st.dim(1).extent() < t_ || st.dim(3).extent() < rows_cap_) {
    st = abuffer(o.act->type(),
                 {config_.d_k(), std::max(t_, 1), config_.nhead, rows_cap_}); // grows rarely: t is 1 when decoding
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

void executor::run(const plan& p, phase ph) {
  for (const step& s : p) {
    std::array<abuffer, max_step_args> bufs;
    std::array<scalar_value, max_step_args> scalars;
    std::array<void*, max_step_args> args;
    std::array<ibuffer, max_step_args> ints;
    for (std::size_t i = 0; i < s.args.size(); ++i) {
      const operand& o = s.args[i];
      if (o.integers) { // lengths, k/v row tables (rows; sources'), the call's tokens (as given), picked ids
        ints[i] = o.kind == role::tokens    ? *o.integers
                  : o.kind == role::lengths ? o.integers->cropped(0, 0, o.integers == &src_lengths_ ? sources() : rows_)
                  : o.kind == role::kv_rows ? kv_rows_view(o)
                                            : o.integers->cropped(o.integers->dimensions() - 1, 0, rows_);
        args[i] = ints[i].raw_buffer();
      } else if (o.weight) { // a kernel does not write its inputs
        args[i] = const_cast<weight_buffer*>(o.weight)->raw_buffer();
      } else if (dsl::layers::is_scalar(o.kind)) {
        scalars[i] = scalar(o);
        args[i] = &scalars[i];
      } else {
        bufs[i] = staged(o) ? staging(o) : view(o, s.reads_per_source && group_ > 1);
        args[i] = bufs[i].raw_buffer();
      }
    }
    int rc;
    {
      scoped_time timed(profiler_, ph, s.call.name().c_str());
      rc = s.call(args.data());
    }
    if (iface_)
      for (std::size_t i = 0; i < s.args.size(); ++i)
        if (s.args[i].kind == role::picked)
          ints[i].set_device_dirty(false); // the executor knows it is on the device
        else if (!s.args[i].integers && !s.args[i].weight && !dsl::layers::is_scalar(s.args[i].kind))
          written(bufs[i]);
    check(rc, s.call.name().c_str());
    for (std::size_t i = 0; i < s.args.size(); ++i)
      if (staged(s.args[i]))
        copy(bufs[i], view(s.args[i])); // the new positions into the cache
  }
}

void executor::encode(const ibuffer& ids, const ibuffer& lengths) {
  rows_ = ids.dim(1).extent(), src_ = ids.dim(0).extent(), t_ = 0, pos_ = 0, group_ = 1;
  reserve({rows_, src_, 1});
  for (int r = 0; r < rows_; ++r)
    src_lengths_(r) = lengths(r);
  upload(src_lengths_);
  tokens_ = ids;
  if (iface_)
    tokens_.set_host_dirty(); // a host buffer: its contents go up
  run(encoder_input_, phase::encode);
  for (const plan& p : encoder_)
    run(p, phase::encode);
  if (encoder_output_.empty()) // no final norm: the memory is the last layer's output
    copy(encoder_x_->cropped(1, 0, src_).cropped(2, 0, rows_), memory());
  else
    run(encoder_output_, phase::encode);
}

void executor::expand(int k) {
  if (k < 1 || group_ != 1)
    throw error("expand: rows are expanded once, by k >= 1");
  if (rows_ * k > rows_cap_)
    throw error("expand: reserve() was not given the beam rows");
  rows_ *= k, group_ = k;
}

void executor::project_memory() { run(cross_, phase::encode); }

fbuffer executor::decode(const ibuffer& ids, int pos, bool logits_to_host) {
  t_ = ids.dim(0).extent(), pos_ = pos;
  if (ids.dim(1).extent() != rows_)
    throw error("decode: token rows differ from the encoded batch");
  if (group_ > 1 && t_ != 1)
    throw error("decode: expanded rows decode one position per call, not " + std::to_string(t_));
  if (pos + t_ > tgt_cap_)
    throw error("decode: position " + std::to_string(pos + t_) + " exceeds the reserved length");
  if (t_ > call_cap_)
    throw error("decode: " + std::to_string(t_) + " positions in one call exceed the reserved " +
                std::to_string(call_cap_));
  for (int r = 0; r < rows_; ++r) {
    tgt_lengths_(r) = pos + t_;
    for (int p = pos; p < pos + t_; ++p)
      tgt_rows_(p, r) = r; // the step writes its rows' new positions
  }
  upload(tgt_lengths_);
  upload(tgt_rows_);
  tgt_rows_own_ = identity(tgt_rows_.cropped(0, 0, pos + t_).cropped(1, 0, rows_));
  tokens_ = ids;
  if (iface_)
    tokens_.set_host_dirty();
  run(decoder_input_, phase::decode);
  for (const plan& p : decoder_)
    run(p, phase::decode);
  run(decoder_output_, phase::decode);
  fbuffer lv = logits_->cropped(1, 0, t_).cropped(2, 0, rows_);
  if (logits_to_host)
    download(lv);
  return lv;
}

executor::beam_candidates executor::candidates() {
  if (t_ != 1)
    throw error("candidates: the last decode() ran " + std::to_string(t_) + " positions; beam steps run one");
  run(candidates_, phase::decode);
  beam_candidates c{logits_->cropped(1, 0, 1).cropped(2, 0, rows_), chunk_max_->cropped(1, 0, 1).cropped(2, 0, rows_),
                    top_log_prob_->cropped(0, 0, 1).cropped(1, 0, rows_)};
  for (fbuffer* b : {&c.logits, &c.chunk_max, &c.top_log_prob})
    download(*b);
  return c;
}

void executor::pick(const int*& ids, const float*& log_probs) {
  if (t_ != 1)
    throw error("pick: the last decode() ran " + std::to_string(t_) + " positions; greedy steps run one");
  run(pick_, phase::decode);
  picked(ids, log_probs);
}

void executor::picked(const int*& ids, const float*& log_probs) const {
  ibuffer iv = pick_ids_.cropped(1, 0, rows_);
  fbuffer pv = pick_lp_.cropped(1, 0, rows_);
  download(iv);
  download(pv);
  ids = &iv(0, 0), log_probs = &pv(0, 0);
}

executor::row_copy executor::row_views(const abuffer& from_buf, int from, const abuffer& to_buf, int to, int batch_dim,
                                       int len_dim, int len) const {
  row_copy c{from_buf.cropped(batch_dim, from, 1), to_buf.cropped(batch_dim, to, 1)};
  if (len_dim >= 0)
    c.from.crop(len_dim, 0, len), c.to.crop(len_dim, 0, len);
  renumber(c.from, batch_dim, to - from); // copies match coordinates
  return c;
}

void executor::copy_row(const abuffer& from_buf, int from, const abuffer& to_buf, int to, int batch_dim, int len_dim,
                        int len) const {
  row_copy c = row_views(from_buf, from, to_buf, to, batch_dim, len_dim, len);
  copy(c.from, c.to);
}

bool executor::per_source_batch(const std::string& key, const abuffer& buf) const {
  const auto listed = [&](const std::vector<std::string>& keys) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  return key.rfind("encoder.", 0) == 0 || &buf == memory_ || listed(per_source_) || listed(source_scratch_);
}

int executor::batch_dim_of(const std::string& key) const {
  const auto& dims = act_dims_.at(key);
  return int(std::find(dims.begin(), dims.end(), "batch") - dims.begin());
}

// The decoder layers read the encoder output as the activation "memory".
fbuffer executor::memory() const { return memory_->cropped(1, 0, src_).cropped(2, 0, sources()); }
fbuffer executor::memory_on_host() {
  fbuffer m = memory();
  download(m);
  return m;
}

} // namespace halformer
