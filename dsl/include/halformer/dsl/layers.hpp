// Encoder and decoder layers described in the DSL, at kernel granularity.
//
// A layer is a hana::tuple of steps; a step runs one kernel (kernels.hpp) on named
// model tensors. Each operand pairs the kernel's formal leaf with the actual
// tensor; the formal dimension symbols (t, tk, d_model, ...) are unified with the
// actual ones (src, tgt, d_model, ...) at compile time, so wiring a tensor of the
// wrong shape into a kernel is a compile error. The runtime walks these tuples to
// run a model; nothing here depends on Halide.
#pragma once

#include "halformer/dsl/kernels.hpp"

#include <string_view>
#include <utility>
#include <vector>

namespace halformer::dsl::layers {

using namespace dims;

// What a step's operand is, so the runtime never guesses from a name:
enum class role {
  activation,      // a tensor of the current phase (encoder or decoder), sized per call
  weight,          // a model weight, by its name relative to the layer; missing is a load error
  cache,           // a self-attention K/V cache: grows by t positions per decode step
  per_source,      // computed once per source and kept per layer (cross-attention K/V)
  lengths,         // per batch row: source or target lengths (int32)
  kv_rows,         // per key position and batch row: the row of k/v attention reads (int32, dsl::attention)
  constant,        // a scalar fixed by the description (causal, offset 0)
  position,        // a scalar: the first position of this decode call
  layer_norm_eps,  // a scalar: the model configuration's LayerNorm epsilon
  embedding_scale, // a scalar: sqrt(d_model), or 1 where the configuration does not scale embeddings
  tokens,          // the call's token ids (t, batch), int32
  picked,          // greedy decoding's chosen ids (t, batch), int32, written by the step
};

// Whether an operand of this role is a scalar argument (not a buffer).
constexpr bool is_scalar(role r) {
  return r == role::constant || r == role::position || r == role::layer_norm_eps || r == role::embedding_scale;
}

// A tensor (or scalar) of the model, with its role.
template <class S> struct tensor_ref {
  using shape_type = S;
  std::string name;
  role kind = role::activation;
  double value = 0; // role::constant
};
template <class S> tensor_ref<S> ref(std::string name, S) { return {std::move(name), role::activation}; }
template <class S> tensor_ref<S> weight(std::string name, S) { return {std::move(name), role::weight}; }
template <class S> tensor_ref<S> cache(std::string name, S) { return {std::move(name), role::cache}; }
template <class S> tensor_ref<S> per_source(std::string name, S) { return {std::move(name), role::per_source}; }
inline auto lengths(std::string name) { return tensor_ref<decltype(shape(batch))>{std::move(name), role::lengths}; }
// "src_rows": every key in the query's own row; "tgt_rows": a decoder's self-attention
// cache, whose rows beams share (the runtime keeps the table).
template <class Seq> auto kv_rows(std::string name, Seq seq) {
  return tensor_ref<decltype(shape(seq, batch))>{std::move(name), role::kv_rows};
}
using scalar_ref = tensor_ref<hana::tuple<>>;
inline scalar_ref constant(double v) { return {"constant", role::constant, v}; }
inline scalar_ref position() { return {"position", role::position}; }
inline scalar_ref layer_norm_eps() { return {"layer_norm_eps", role::layer_norm_eps}; }
inline scalar_ref embedding_scale() { return {"embedding_scale", role::embedding_scale}; }
template <class S> tensor_ref<S> tokens(S) { return {"tokens", role::tokens}; }
template <class S> tensor_ref<S> picked(S) { return {"picked", role::picked}; }

// One operand: the kernel's formal leaf (its argument name and element type) and
// the actual tensor.
template <class Formal, class Actual> struct operand {
  using formal_shape = shape_t<Formal>;
  using actual_shape = typename Actual::shape_type;
  static_assert(rank_v<formal_shape> == rank_v<actual_shape>,
                "halformer::dsl::layers: an operand's rank differs from the kernel's");
  static constexpr bool is_output = std::is_same_v<typename Formal::op_type, op::output>;
  std::string formal;
  dtype type;
  Actual actual;
};
template <class Formal, class S> auto operator>>(const Formal& f, const tensor_ref<S>& a) {
  return operand<Formal, tensor_ref<S>>{f.op.name, f.op.type, a};
}
// (formal dim, actual dim) pairs of one operand.
template <class Op> constexpr auto dim_pairs() {
  return hana::zip(typename Op::formal_shape{}, typename Op::actual_shape{});
}

// Every formal dimension maps to exactly one actual dimension across all operands.
template <class... Ops> constexpr bool unifies() {
  constexpr auto pairs = hana::flatten(hana::make_tuple(dim_pairs<Ops>()...));
  return decltype(hana::all_of(pairs, [](auto p) {
    return hana::all_of(decltype(pairs){}, [p](auto q) {
      return hana::or_(hana::not_equal(hana::at_c<0>(p), hana::at_c<0>(q)),
                       hana::equal(hana::at_c<1>(p), hana::at_c<1>(q)));
    });
  }))::value;
}

template <class... Ops> struct step {
  static_assert(unifies<Ops...>(), "halformer::dsl::layers: inconsistent wiring: one of the kernel's dimensions "
                                   "would stand for two different model dimensions");
  std::string function; // the kernel (kernels::X::name), e.g. ffn_relu
  hana::tuple<Ops...> operands;
};
template <class Kernel, class... Ops> auto run(const Kernel&, Ops... ops) {
  return step<Ops...>{std::string(Kernel::name), hana::make_tuple(std::move(ops)...)};
}
// A kernel chosen at run time among variants of one interface (ffn_relu, ffn_gelu).
template <class Kernel, class... Ops> auto run_variant(const Kernel&, std::string function, Ops... ops) {
  return step<Ops...>{std::move(function), hana::make_tuple(std::move(ops)...)};
}

// Output leaves of the kernels (formal), named as in the generators.
namespace out {
inline auto head_layout(const std::string& n) { return make(op::output{n}, shape(d_k, t, heads, batch)); }
inline auto model_layout(const std::string& n) { return make(op::output{n}, shape(d_model, t, batch)); }
inline auto vocab_layout(const std::string& n) { return make(op::output{n}, shape(vocab, t, batch)); }
template <dtype D> auto rows(const std::string& n, element<D>) {
  return make<element<D>>(op::output{n, D}, shape(t, batch));
}
inline auto chunk_layout(const std::string& n) { return make(op::output{n}, shape(chunk, t, batch)); }
} // namespace out

// LayerNorm of x (d_model, T, batch) into y with the weights <norm>.weight / .bias.
template <class T> auto norm_step(T seq, const std::string& norm_weights, const std::string& x, const std::string& y) {
  kernels::layernorm ln;
  return run(ln, ln.x >> ref(x, shape(d_model, seq, batch)),
             ln.gamma >> weight(norm_weights + ".weight", shape(d_model)),
             ln.beta >> weight(norm_weights + ".bias", shape(d_model)), ln.eps >> layer_norm_eps(),
             out::model_layout("out") >> ref(y, shape(d_model, seq, batch)));
}

// Attention's output projection with the residual: summed = x + context W_o + b_o.
template <class T>
auto out_projection_step(T seq, const std::string& prefix, const std::string& context, const std::string& x,
                         const std::string& summed) {
  kernels::out_projection op;
  return run(op, op.a >> ref(context, shape(d_k, seq, heads, batch)),
             op.w >> weight(prefix + "w_o", shape(d_model, d_k, heads)), op.b >> weight(prefix + "b_o", shape(d_model)),
             op.residual >> ref(x, shape(d_model, seq, batch)),
             out::model_layout("out") >> ref(summed, shape(d_model, seq, batch)));
}

// The self-attention block on x (d_model, T, batch) with T = src or tgt; the
// residual-added result is named `y`. Post-LN: y = norm(x + attn(x));
// pre-LN: y = x + attn(norm(x)). Keys and values go to the layer's caches.
template <class T, class NormFirst>
auto self_attention(T seq, NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                    const std::string& x, const std::string& y, bool causal) {
  kernels::qkv_projection hp;
  kernels::attention at;
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  const auto heads_ = [&](const std::string& n) { return ref(prefix + n, shape(d_k, seq, heads, batch)); };
  // Causal self-attention decodes step by step: its keys and values are caches.
  const auto kv = [&](const std::string& n) {
    return causal ? cache(prefix + n, shape(d_k, seq, heads, batch)) : ref(prefix + n, shape(d_k, seq, heads, batch));
  };
  const auto w = [&](const std::string& n) { return weight(prefix + n, shape(d_k, heads, d_model)); };
  const auto b = [&](const std::string& n) { return weight(prefix + n, shape(d_k, heads)); };
  auto qkv = run(hp, hp.x >> ref(norm_first ? normed : x, shape(d_model, seq, batch)), hp.weight("w_q") >> w("w_q"),
                 hp.weight("w_k") >> w("w_k"), hp.weight("w_v") >> w("w_v"), hp.bias("b_q") >> b("b_q"),
                 hp.bias("b_k") >> b("b_k"), hp.bias("b_v") >> b("b_v"), out::head_layout("q") >> heads_("q"),
                 out::head_layout("k") >> kv("k_cache"), out::head_layout("v") >> kv("v_cache"));
  auto att = run(at, at.q >> heads_("q"), at.k >> kv("k_cache"), at.v >> kv("v_cache"),
                 at.kv_rows >> kv_rows(causal ? "tgt_rows" : "src_rows", seq),
                 at.lengths >> lengths(causal ? "tgt_lengths" : "src_lengths"), at.causal >> constant(causal),
                 at.offset >> position(), out::head_layout("out") >> heads_("context"));
  auto proj = out_projection_step(seq, prefix, prefix + "context", x, summed);
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(norm_step(seq, norm_weights, x, normed), qkv, att, proj);
  else
    return hana::make_tuple(qkv, att, proj, norm_step(seq, norm_weights, summed, y));
}

// Cross-attention of decoder states x (d_model, tgt, batch) over the encoder memory
// (d_model, src, batch). K/V of the memory are projected once per source.
template <class NormFirst>
auto cross_attention(NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                     const std::string& x, const std::string& y) {
  kernels::kv_projection kvp;
  kernels::q_projection qp;
  kernels::attention at;
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  const auto w = [&](const std::string& n) { return weight(prefix + n, shape(d_k, heads, d_model)); };
  const auto b = [&](const std::string& n) { return weight(prefix + n, shape(d_k, heads)); };
  const auto q = ref(prefix + "q", shape(d_k, tgt, heads, batch));
  const auto k = per_source(prefix + "k_memory", shape(d_k, src, heads, batch));
  const auto v = per_source(prefix + "v_memory", shape(d_k, src, heads, batch));
  auto kv = run(kvp, kvp.x >> ref("memory", shape(d_model, src, batch)), kvp.weight("w_k") >> w("w_k"),
                kvp.weight("w_v") >> w("w_v"), kvp.bias("b_k") >> b("b_k"), kvp.bias("b_v") >> b("b_v"),
                out::head_layout("k") >> k, out::head_layout("v") >> v);
  auto qs = run(qp, qp.x >> ref(norm_first ? normed : x, shape(d_model, tgt, batch)), qp.weight("w_q") >> w("w_q"),
                qp.bias("b_q") >> b("b_q"), out::head_layout("q") >> q);
  auto att = run(at, at.q >> q, at.k >> k, at.v >> v, at.kv_rows >> kv_rows("src_rows", src),
                 at.lengths >> lengths("src_lengths"), at.causal >> constant(false), at.offset >> constant(0),
                 out::head_layout("out") >> ref(prefix + "context", shape(d_k, tgt, heads, batch)));
  auto proj = out_projection_step(tgt, prefix, prefix + "context", x, summed);
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(kv, norm_step(tgt, norm_weights, x, normed), qs, att, proj);
  else
    return hana::make_tuple(kv, qs, att, proj, norm_step(tgt, norm_weights, summed, y));
}

// FFN block: post-LN y = norm(x + ffn(x)); pre-LN y = x + ffn(norm(x)).
template <class T, class NormFirst>
auto feed_forward(T seq, NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                  const std::string& x, const std::string& y, const std::string& activation) {
  kernels::ffn f;
  const std::string normed = prefix + "normed_in", summed = norm_first ? y : prefix + "sum";
  const auto model = ref(x, shape(d_model, seq, batch));
  auto ffn = run_variant(
      f, "ffn_" + activation, f.x >> ref(norm_first ? normed : x, shape(d_model, seq, batch)), f.residual >> model,
      f.w1 >> weight("linear1.weight", shape(d_ff, d_model)), f.b1 >> weight("linear1.bias", shape(d_ff)),
      f.w2 >> weight("linear2.weight", shape(d_model, d_ff)), f.b2 >> weight("linear2.bias", shape(d_model)),
      out::model_layout("out") >> ref(summed, shape(d_model, seq, batch)));
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
template <class NormFirst> auto encoder_layer(NormFirst norm_first, const std::string& activation) {
  return hana::concat(self_attention(src, norm_first, "self_attn.", "norm1", "x", "h", false),
                      feed_forward(src, norm_first, "ffn.", "norm2", "h", "x", activation));
}

// One decoder layer: masked self-attention over the KV cache, cross-attention over
// the encoder memory, FFN: "y" -> "y".
template <class NormFirst> auto decoder_layer(NormFirst norm_first, const std::string& activation) {
  return hana::concat(hana::concat(self_attention(tgt, norm_first, "self_attn.", "norm1", "y", "h1", true),
                                   cross_attention(norm_first, "multihead_attn.", "norm2", "h1", "h2")),
                      feed_forward(tgt, norm_first, "ffn.", "norm3", "h2", "y", activation));
}

// The model around its layers. Activation names with a phase ("decoder.memory")
// are shared between the phases; the others belong to the step's phase.
// Encoder input: source tokens -> scaled embeddings + positions from 0, as "x".
inline auto encoder_input() {
  kernels::embedding e;
  return hana::make_tuple(run(e, e.table >> weight("src_embed", shape(d_model, vocab)),
                              e.ids >> tokens(shape(src, batch)), e.scale >> embedding_scale(), e.offset >> constant(0),
                              out::model_layout("out") >> ref("x", shape(d_model, src, batch))));
}
// Encoder output: the final norm of "x" into the memory the decoder reads (a
// model without final norms copies "x": no kernel).
inline auto encoder_output() { return hana::make_tuple(norm_step(src, "encoder_norm", "x", "decoder.memory")); }
// Decoder input: target tokens -> embeddings at this call's positions, as "y".
inline auto decoder_input() {
  kernels::embedding e;
  return hana::make_tuple(run(e, e.table >> weight("tgt_embed", shape(d_model, vocab)),
                              e.ids >> tokens(shape(tgt, batch)), e.scale >> embedding_scale(), e.offset >> position(),
                              out::model_layout("out") >> ref("y", shape(d_model, tgt, batch))));
}
// Decoder output: (final norm of "y", then) the logits over the target vocabulary.
template <class FinalNorm> auto decoder_output(FinalNorm final_norm) {
  kernels::logits lg;
  const std::string x = decltype(final_norm)::value ? "normed" : "y";
  auto logits =
      run(lg, lg.x >> ref(x, shape(d_model, tgt, batch)), lg.w >> weight("generator.weight", shape(vocab, d_model)),
          lg.b >> weight("generator.bias", shape(vocab)),
          out::vocab_layout("out") >> ref("logits", shape(vocab, tgt, batch)));
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
                            {names.begin(), names.end()}});
    });
    out.push_back(std::move(f));
  });
  return out;
}

} // namespace halformer::dsl::layers
