#include "presets.hpp"

#include "database.hpp"
#include "halformer/error.hpp"
#include "halformer/shape_buckets.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace halformer::tuner {

std::vector<std::string> preset_names() { return {"transformer-base"}; }

model_dims transformer_base() { return {512, 8, 2048, 32000, 32000, "relu"}; }

namespace {
// A kernel's weight: its percent of a decode step plus its percent of the
// encoder, from `halformer run --profile` (Transformer-base, 128 source tokens,
// greedy; Zen 5: decode step logits 34, FFN 32, qkv 13, out 8, attention 5, q 4,
// LayerNorm 1; encoder FFN 53, qkv 20, kv 11, out 7, attention 5, embedding 2,
// LayerNorm 1; beam search's candidates 2-3% of a beam step). Shared evenly, a
// 15-minute preset tune gave the FFN and logits (two thirds of a step, 10-15 s a
// candidate) 2-4 candidates per shape, LayerNorm and softmax 30-45.
double run_share(const std::string& kernel, const std::string& ffn) {
  static const std::map<std::string, double> share{
      {"logits", 34},       {"qkv_projection", 33}, {"kv_projection", 11}, {"out_projection", 15},
      {"attention", 10},    {"q_projection", 4},    {"embedding", 2},      {"layernorm", 2},
      {"add_layernorm", 1}, {"softmax", 1},         {"beam_candidates", 2}};
  if (kernel == ffn)
    return 85;
  const auto s = share.find(kernel);
  return s == share.end() ? 1 : s->second;
}
} // namespace

std::vector<preset_entry> model_shapes(const model_dims& m, int prefill_t, int batch) {
  if (m.d_model <= 0 || m.heads <= 0 || m.d_model % m.heads != 0)
    throw error("model shapes: d_model " + std::to_string(m.d_model) + " is not a multiple of " +
                std::to_string(m.heads) + " heads");
  if (prefill_t < 2 || batch < 2)
    throw error("model shapes: prefill tokens and batch must be at least 2 (prefill and batched decode are "
                "their own buckets; batch 1 is tuned as well)");
  const std::string T = std::to_string(prefill_t), B = std::to_string(batch), D = std::to_string(m.d_model);
  // The GEMMs' decode_wide step: beam 4 over 4 x batch sentences (128 rows at batch
  // 8: the benchmark's beam 4 x 32).
  const std::string W = std::to_string(std::max(wide_decode_batch, 16 * batch));
  const std::string heads = "d_k=" + std::to_string(m.d_model / m.heads) + ",heads=" + std::to_string(m.heads);
  const std::string ffn = "ffn_" + m.activation;
  const std::string ffn_dims = "d_model=" + D + ",d_ff=" + std::to_string(m.d_ff);
  const std::string src = std::to_string(m.src_vocab), tgt = std::to_string(m.tgt_vocab);
  // Per kernel: its shapes in the model, the primary (the AOT section's) first:
  // prefill at (T, B), decode steps at batch B and 1 attending to T keys, and the
  // GEMMs' at W rows.
  const std::vector<std::tuple<std::string, std::string, bool>> e{
      {"embedding", "d_model=" + D + ",vocab=" + src + ",t=" + T + ",batch=" + B, true},
      {"embedding", "d_model=" + D + ",vocab=" + tgt + ",t=1,batch=" + B, false},
      {"qkv_projection", heads + ",t=" + T + ",batch=" + B, true},
      {"qkv_projection", heads + ",t=1,batch=" + B, false},
      {"qkv_projection", heads + ",t=1,batch=1", false},
      {"qkv_projection", heads + ",t=1,batch=" + W, false},
      {"kv_projection", heads + ",t=" + T + ",batch=" + B, true},
      {"q_projection", heads + ",t=1,batch=" + B, true},
      {"q_projection", heads + ",t=1,batch=1", false},
      {"q_projection", heads + ",t=1,batch=" + W, false},
      {"attention", heads + ",t=" + T + ",tk=" + T + ",batch=" + B + ",causal=0", true},
      {"attention", heads + ",t=1,tk=" + T + ",batch=" + B + ",causal=1", false},
      {"attention", heads + ",t=1,tk=" + T + ",batch=1,causal=1", false},
      {"out_projection", heads + ",t=" + T + ",batch=" + B, true},
      {"out_projection", heads + ",t=1,batch=" + B, false},
      {"out_projection", heads + ",t=1,batch=1", false},
      {"out_projection", heads + ",t=1,batch=" + W, false},
      {ffn, ffn_dims + ",t=" + T + ",batch=" + B, true},
      {ffn, ffn_dims + ",t=1,batch=" + B, false},
      {ffn, ffn_dims + ",t=1,batch=1", false},
      {ffn, ffn_dims + ",t=1,batch=" + W, false},
      {"layernorm", "d_model=" + D + ",t=" + T + ",batch=" + B, true},
      {"layernorm", "d_model=" + D + ",t=1,batch=" + B, false},
      {"add_layernorm", "d_model=" + D + ",t=" + T + ",batch=" + B, true},
      {"softmax", "n=" + T + ",t=" + T + ",batch=" + B, true},
      {"beam_candidates", "vocab=" + tgt + ",t=1,batch=" + B, true},
      {"logits", "d_model=" + D + ",vocab=" + tgt + ",t=1,batch=" + B, true},
      {"logits", "d_model=" + D + ",vocab=" + tgt + ",t=1,batch=1", false},
      {"logits", "d_model=" + D + ",vocab=" + tgt + ",t=1,batch=" + W, false},
  };
  std::vector<preset_entry> out;
  for (const auto& [k, s, p] : e)
    out.push_back({k, canonical_shape(s), p, run_share(k, ffn)});
  for (auto& entry : out) // a kernel's share, spread over its shapes
    entry.weight /=
        double(std::count_if(out.begin(), out.end(), [&](const auto& o) { return o.kernel == entry.kernel; }));
  return out;
}

std::vector<double> budget_shares(const std::vector<preset_entry>& jobs, double total_s) {
  constexpr double even = 0.25; // of the total, spread evenly
  double sum = 0;
  for (const auto& j : jobs)
    sum += j.weight;
  std::vector<double> out;
  for (const auto& j : jobs)
    out.push_back(total_s * (even / double(jobs.size()) +
                             (sum > 0 ? (1 - even) * j.weight / sum : (1 - even) / double(jobs.size()))));
  return out;
}

std::vector<preset_entry> typed_shapes(const std::vector<preset_entry>& float32, const std::string& compute_type) {
  if (compute_type == "float32")
    return float32;
  if (compute_type != "int8" && compute_type != "bfloat16")
    throw error("unknown compute type '" + compute_type + "' (float32, int8 or bfloat16)");
  const std::string suffix = compute_type == "int8" ? "_int8" : "_bf16";
  const auto is_gemm = [](const std::string& k) {
    return k.ends_with("_projection") || k.starts_with("ffn_") || k == "logits";
  };
  std::vector<preset_entry> out;
  bool f16kv_primary = true;
  for (const auto& e : float32) {
    if (e.kernel == "attention" && bucket_of(e.shape) != "prefill") {
      // Their decode steps read float16 caches (a CPU model's "auto" cache with
      // these GEMMs): attention_f16kv, its own section, at the batch's step first.
      out.push_back({"attention_f16kv", e.shape, f16kv_primary, e.weight});
      f16kv_primary = false;
      continue;
    }
    if (!is_gemm(e.kernel)) {
      out.push_back(e);
      continue;
    }
    const std::string name = e.kernel + suffix;
    const bool decode = bucket_of(e.shape) == "decode";
    auto same = std::find_if(out.begin(), out.end(), [&](const preset_entry& o) { return o.kernel == name; });
    if (same == out.end()) {
      out.push_back({name, e.shape, true, e.weight});
      continue;
    }
    same->weight += e.weight; // one shape carries the kernel's share
    if (decode && bucket_of(same->shape) != "decode")
      same->shape = e.shape; // the batch's decode step over the prefill
  }
  return out;
}

std::vector<preset_entry> preset(const std::string& name) {
  if (name != "transformer-base")
    throw error("unknown preset '" + name + "' (transformer-base)");
  return model_shapes(transformer_base(), 128, 8);
}

} // namespace halformer::tuner
