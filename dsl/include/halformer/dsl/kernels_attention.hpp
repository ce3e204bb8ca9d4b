// The attention kernels: scaled dot-product attention over float32 keys and
// values, or over float16 ones (a KV cache of half the bytes), and the step that
// rounds a projection's keys and values into such a cache. Part of kernels.hpp's
// registry.
#pragma once

#include "halformer/dsl/float16.hpp"

namespace halformer::dsl::kernels {

using namespace dims;

// k and v rows by a table (dsl::attention): decode steps read a beam's cache in
// place, the encoder passes the identity (and says so: own_rows). `KV` is k's and
// v's element type.
template <dtype KV> struct attention_over {
  static constexpr std::string_view schedule = "attention";
  HF_LEAF(q, input("q", shape(d_k, t, heads, batch)));
  decltype(input("k", shape(d_k, tk, heads, kv_row), element<KV>{})) k =
      input("k", shape(d_k, tk, heads, kv_row), element<KV>{});
  decltype(input("v", shape(d_k, tk, heads, kv_row), element<KV>{})) v =
      input("v", shape(d_k, tk, heads, kv_row), element<KV>{});
  HF_LEAF(kv_rows, input("kv_rows", shape(tk, batch), i32));
  HF_LEAF(lengths, input("lengths", shape(batch), i32));
  HF_LEAF(causal, param("causal", boolean));
  HF_LEAF(offset, param("offset", i32));
  HF_LEAF(decode_step, param("decode_step", boolean));
  HF_LEAF(own_rows, param("own_rows", boolean));

  auto algorithm() const {
    return dsl::attention("attention", q, k, v, kv_rows, lengths, causal, offset, decode_step, own_rows);
  }
  auto inputs() const { return hana::make_tuple(q, k, v, kv_rows, lengths, causal, offset, decode_step, own_rows); }
  auto outputs() const { return hana::make_tuple(result("out", algorithm())); }
};
struct attention : attention_over<dtype::f32> {
  static constexpr std::string_view name = "attention";
};
// Keys and values in float16, widened where they are read: half the bytes per
// cached position. The same schedule, with knob values of its own (a section of
// attention's knobs): a decode step's keys want other partial sums in float16
// (cpu/attention.hpp).
struct attention_f16kv : attention_over<dtype::f16> {
  static constexpr std::string_view name = "attention_f16kv", schedule = "attention_f16kv";
  static constexpr bool cpu_only = true;
};

// A projection's keys and values (head layout, float32) rounded to float16 for
// attention_f16kv: a decode step's new positions into the caches, or the
// encoder memory's keys and values once per source.
struct kv_to_float16 {
  static constexpr std::string_view name = "kv_to_float16", schedule = "kv_to_float16";
  static constexpr bool cpu_only = true;
  HF_LEAF(k, input("k", shape(d_k, t, heads, batch)));
  HF_LEAF(v, input("v", shape(d_k, t, heads, batch)));

  auto inputs() const { return hana::make_tuple(k, v); }
  auto outputs() const {
    return hana::make_tuple(result("k_f16", to_float16("k_f16", k)), result("v_f16", to_float16("v_f16", v)));
  }
};

} // namespace halformer::dsl::kernels
