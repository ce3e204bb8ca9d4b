// Encoder and decoder layers described in the DSL, at kernel granularity.
//
// A layer is a hana::tuple of steps; a step runs one kernel (kernels.hpp) on named
// model tensors. Each operand pairs the kernel's formal leaf with the actual
// tensor; the formal dimension symbols (t, tk, d_model, ...) are unified with the
// actual ones (src, tgt, d_model, ...) at compile time, so wiring a tensor of the
// wrong shape into a kernel is a compile error. The runtime walks these tuples to
// run a model; nothing here depends on Halide.
#pragma once

#include "halformer/dsl/gemm_steps.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace halformer::dsl::layers {

using namespace dims;

// LayerNorm of x (d_model, T, batch) into y with the weights <norm>.weight / .bias.
template <class T> auto norm_step(T seq, const std::string& norm_weights, const std::string& x, const std::string& y) {
  kernels::layernorm ln;
  return run(ln, ln.x >> ref(x, shape(d_model, seq, batch)),
             ln.gamma >> weight(norm_weights + ".weight", shape(d_model)),
             ln.beta >> weight(norm_weights + ".bias", shape(d_model)), ln.eps >> layer_norm_eps(),
             out::model_layout("out") >> ref(y, shape(d_model, seq, batch)));
}

// Keys and values of x by the head projection Projection, as attention of type KV reads
// them: written to `k` and `v` (float32), or (float16) to the float32 scratch
// `k32` and `v32` and rounded into `k` and `v` by kv_to_float16. One or two steps.
template <class KV, template <class> class Projection, class C, class X, class Q, class R, class S>
auto key_value_steps(C gemms, const std::string& prefix, const X& x, const Q& q, const R& k, const R& v, const S& k32,
                     const S& v32) {
  const auto projection = [&](const auto& k_out, const auto& v_out) {
    const auto outs = hana::make_tuple(std::pair{std::string("k"), k_out}, std::pair{std::string("v"), v_out});
    return hana::unpack(hana::concat(q, outs),
                        [&](const auto&... o) { return head_projection_step<Projection>(gemms, prefix, x, o...); });
  };
  if constexpr (is_f16_kv_v<KV>) {
    kernels::kv_to_float16 kc;
    return hana::make_tuple(projection(k32, v32), run(kc, kc.k >> k32, kc.v >> v32, out::head_layout("k_f16", f16) >> k,
                                                      out::head_layout("v_f16", f16) >> v));
  } else {
    return hana::make_tuple(projection(k, v));
  }
}
template <class KV>
using attention_kernel_t = std::conditional_t<is_f16_kv_v<KV>, kernels::attention_f16kv, kernels::attention>;

// The self-attention block on x (d_model, T, batch) with T = src or tgt; the
// residual-added result is named `y`. Post-LN: y = norm(x + attn(x));
// pre-LN: y = x + attn(norm(x)). Keys and values go to the layer's caches, of
// type KV (causal blocks only: the encoder's are float32).
template <class T, class NormFirst, class G, class KV>
auto self_attention(T seq, NormFirst norm_first, G gemms, KV, const std::string& prefix,
                    const std::string& norm_weights, const std::string& x, const std::string& y, bool causal) {
  attention_kernel_t<KV> at;
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  const auto heads_ = [&](const std::string& n) { return ref(prefix + n, shape(d_k, seq, heads, batch)); };
  // Causal self-attention decodes step by step: its keys and values are caches.
  const auto kv = [&](const std::string& n) {
    return causal ? cache(prefix + n, shape(d_k, seq, heads, batch)) : ref(prefix + n, shape(d_k, seq, heads, batch));
  };
  auto qkv = key_value_steps<KV, kernels::qkv_projection_in>(
      gemms, prefix, ref(norm_first ? normed : x, shape(d_model, seq, batch)),
      hana::make_tuple(std::pair{std::string("q"), heads_("q")}), kv("k_cache"), kv("v_cache"), heads_("k_new"),
      heads_("v_new"));
  auto att =
      run(at, at.q >> heads_("q"), at.k >> kv("k_cache"), at.v >> kv("v_cache"),
          at.kv_rows >> kv_rows(causal ? "tgt_rows" : "src_rows", seq),
          at.lengths >> lengths(causal ? "tgt_lengths" : "src_lengths"), at.causal >> constant(causal),
          at.offset >> position(), at.decode_step >> (causal ? decode_step() : constant(false)),
          at.own_rows >> own_rows(causal ? "tgt_rows" : "src_rows"), out::head_layout("out") >> heads_("context"));
  auto proj = out_projection_step(gemms, seq, prefix, prefix + "context", x, summed);
  if constexpr (decltype(norm_first)::value)
    return hana::concat(hana::prepend(qkv, norm_step(seq, norm_weights, x, normed)), hana::make_tuple(att, proj));
  else
    return hana::append(hana::concat(qkv, hana::make_tuple(att, proj)), norm_step(seq, norm_weights, summed, y));
}

// Cross-attention of decoder states x (d_model, tgt, batch) over the encoder memory
// (d_model, src, batch). K/V of the memory (of type KV) are projected once per
// source; float16 ones through one float32 scratch that every layer shares.
template <class NormFirst, class G, class KV>
auto cross_attention(NormFirst norm_first, G gemms, KV, const std::string& prefix, const std::string& norm_weights,
                     const std::string& x, const std::string& y) {
  attention_kernel_t<KV> at;
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  const auto q = ref(prefix + "q", shape(d_k, tgt, heads, batch));
  const auto k = per_source(prefix + "k_memory", shape(d_k, src, heads, batch));
  const auto v = per_source(prefix + "v_memory", shape(d_k, src, heads, batch));
  auto kv = key_value_steps<KV, kernels::kv_projection_in>(gemms, prefix, ref("memory", shape(d_model, src, batch)),
                                                           hana::make_tuple(), k, v,
                                                           source_scratch("memory_k", shape(d_k, src, heads, batch)),
                                                           source_scratch("memory_v", shape(d_k, src, heads, batch)));
  auto qs = head_projection_step<kernels::q_projection_in>(
      gemms, prefix, ref(norm_first ? normed : x, shape(d_model, tgt, batch)), std::pair{std::string("q"), q});
  auto att = run(at, at.q >> q, at.k >> k, at.v >> v, at.kv_rows >> kv_rows("src_rows", src),
                 at.lengths >> lengths("src_lengths"), at.causal >> constant(false), at.offset >> constant(0),
                 at.decode_step >> decode_step(), at.own_rows >> own_rows("src_rows"),
                 out::head_layout("out") >> ref(prefix + "context", shape(d_k, tgt, heads, batch)));
  auto proj = out_projection_step(gemms, tgt, prefix, prefix + "context", x, summed);
  if constexpr (decltype(norm_first)::value)
    return hana::concat(kv, hana::make_tuple(norm_step(tgt, norm_weights, x, normed), qs, att, proj));
  else
    return hana::concat(kv, hana::make_tuple(qs, att, proj, norm_step(tgt, norm_weights, summed, y)));
}

// FFN block: post-LN y = norm(x + ffn(x)); pre-LN y = x + ffn(norm(x)).
template <class T, class NormFirst, class G>
auto feed_forward(T seq, NormFirst norm_first, G gemms, const std::string& prefix, const std::string& norm_weights,
                  const std::string& x, const std::string& y, const std::string& activation) {
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  auto ffn = ffn_step(gemms, seq, norm_first ? normed : x, x, summed, activation);
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(norm_step(seq, norm_weights, x, normed), ffn);
  else
    return hana::make_tuple(ffn, norm_step(seq, norm_weights, summed, y));
}

// One encoder layer: "x" -> "x" (in place by name; the runtime double-buffers).
// Weight names are PyTorch's nn.TransformerEncoderLayer names relative to the
// layer (norm1.*, linear1.*, ...), except that attention weights are the repacked
// per-projection tensors self_attn.w_q / b_q / ... / w_o / b_o, which the runtime
// derives from in_proj_weight / out_proj at load time.
template <class NormFirst, class G = compute::float32>
auto encoder_layer(NormFirst norm_first, const std::string& activation, G gemms = {}) {
  return hana::concat(self_attention(src, norm_first, gemms, float32_kv, "self_attn.", "norm1", "x", "h", false),
                      feed_forward(src, norm_first, gemms, "ffn.", "norm2", "h", "x", activation));
}

// One decoder layer: masked self-attention over the KV cache, cross-attention over
// the encoder memory (both with keys and values of type KV), FFN: "y" -> "y".
template <class NormFirst, class G = compute::float32, class KV = decltype(float32_kv)>
auto decoder_layer(NormFirst norm_first, const std::string& activation, G gemms = {}, KV kv = {}) {
  return hana::concat(hana::concat(self_attention(tgt, norm_first, gemms, kv, "self_attn.", "norm1", "y", "h1", true),
                                   cross_attention(norm_first, gemms, kv, "multihead_attn.", "norm2", "h1", "h2")),
                      feed_forward(tgt, norm_first, gemms, "ffn.", "norm3", "h2", "y", activation));
}

// The model around its layers. Activation names with a phase ("decoder.memory")
// are shared between the phases; the others belong to the step's phase.
// Encoder input: source tokens -> scaled embeddings + positions from the model's
// first (0; fairseq's pad + 1), as "x".
template <class G = compute::float32> auto encoder_input(G gemms = {}) {
  return hana::make_tuple(embedding_step(gemms, "src_embed", src, first_position(), "x"));
}
// Encoder output: the final norm of "x" into the memory the decoder reads (a
// model without final norms copies "x": no kernel).
inline auto encoder_output() { return hana::make_tuple(norm_step(src, "encoder_norm", "x", "decoder.memory")); }
// Decoder input: target tokens -> embeddings at this call's positions, as "y".
template <class G = compute::float32> auto decoder_input(G gemms = {}) {
  return hana::make_tuple(embedding_step(gemms, "tgt_embed", tgt, target_position(), "y"));
}
// Decoder output: (final norm of "y", then) the logits over the target vocabulary.
template <class FinalNorm, class G = compute::float32> auto decoder_output(FinalNorm final_norm, G gemms = {}) {
  auto logits = logits_step(gemms, decltype(final_norm)::value ? "normed" : "y");
  if constexpr (decltype(final_norm)::value)
    return hana::make_tuple(norm_step(tgt, "decoder_norm", "y", "normed"), logits);
  else
    return hana::make_tuple(logits);
}
// Beam search's candidates per row of the logits: chunk maxima and the best
// entry's log-probability (the host then reads the chunks that can win).
inline auto beam_choice() {
  kernels::beam_candidates bc;
  return hana::make_tuple(run(bc, bc.x >> ref("logits", shape(vocab, tgt, batch)),
                              out::chunk_layout("chunk_max") >> ref("chunk_max", shape(chunk, tgt, batch)),
                              out::rows("top_log_prob", f32) >> ref("top_log_prob", shape(tgt, batch))));
}
// Greedy decoding's choice per row of the logits: the id and its log-probability.
inline auto greedy_choice() {
  kernels::greedy_pick gp;
  return hana::make_tuple(run(gp, gp.x >> ref("logits", shape(vocab, tgt, batch)),
                              out::rows("ids", i32) >> picked(shape(tgt, batch)),
                              out::rows("log_probs", f32) >> picked(shape(tgt, batch))));
}
// Random sampling's choice per row of the logits: the id and its log-probability
// (into greedy's buffers), from the rows' draws, forced tokens and token lists
// and the call's options, which the host sets before each step.
inline auto sampling_choice() {
  kernels::sample_pick sp;
  return hana::make_tuple(run(
      sp, sp.x >> ref("logits", shape(vocab, tgt, batch)), sp.draws >> choice_input("draws", shape(tgt, batch)),
      sp.forced >> choice_input("forced", shape(tgt, batch)),
      sp.banned >> choice_input("banned", shape(rule, tgt, batch)),
      sp.penalized >> choice_input("penalized", shape(rule, tgt, batch)), sp.top_k >> decode_option("sampling_topk"),
      sp.top_p >> decode_option("sampling_topp"), sp.temperature >> decode_option("sampling_temperature"),
      sp.penalty >> decode_option("repetition_penalty"), out::rows("ids", i32) >> picked(shape(tgt, batch)),
      out::rows("log_probs", f32) >> picked(shape(tgt, batch))));
}

// Calls f(step) for each step in order.
template <class Layer, class F> void walk(const Layer& layer, F&& f) { hana::for_each(layer, f); }

// Calls f(operand) for each operand of a step (formal, type, actual, is_output).
template <class Step, class F> void for_each_operand(const Step& s, F&& f) { hana::for_each(s.operands, f); }

// A step with its types erased, for runtimes that plan kernel calls once.
struct flat_operand {
  std::string formal; // the kernel's argument name
  dtype type;         // its element type
  bool is_output;
  std::string actual;
  role kind;
  double value;                  // role::constant
  std::vector<std::string> dims; // the actual tensor's dimension symbols, innermost first
  int panel_inputs = 0;          // a weight in panels: a buffer of two dims more
  int rank() const { return int(dims.size()) + (panel_inputs > 0 ? panels::extra_dims : 0); }
};
struct flat_step {
  std::string function;
  std::vector<flat_operand> operands;
};
template <class Layer> std::vector<flat_step> flatten(const Layer& layer) {
  std::vector<flat_step> out;
  walk(layer, [&](const auto& s) {
    flat_step f{s.function, {}};
    hana::for_each(s.operands, [&](const auto& op) {
      using Op = std::decay_t<decltype(op)>;
      const auto names = dim_names(typename Op::actual_shape{});
      f.operands.push_back({op.formal,
                            op.type,
                            Op::is_output,
                            op.actual.name,
                            op.actual.kind,
                            op.actual.value,
                            {names.begin(), names.end()},
                            op.panel_inputs});
    });
    out.push_back(std::move(f));
  });
  return out;
}

} // namespace halformer::dsl::layers
