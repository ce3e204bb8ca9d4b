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

// A tensor of the model: activations by name, weights by their state_dict suffix.
template <class S> struct tensor_ref {
  using shape_type = S;
  std::string name;
};
template <class S> tensor_ref<S> ref(std::string name, S) { return {std::move(name)}; }

// One operand: the kernel's formal leaf name and the actual tensor.
template <class Formal, class Actual> struct operand {
  using formal_shape = shape_t<Formal>;
  using actual_shape = typename Actual::shape_type;
  static_assert(rank_v<formal_shape> == rank_v<actual_shape>,
                "halformer::dsl::layers: an operand's rank differs from the kernel's");
  static constexpr bool is_output = std::is_same_v<typename Formal::op_type, op::output>;
  std::string formal;
  std::string actual;
};
template <class Formal, class S> auto operator>>(const Formal& f, const tensor_ref<S>& a) {
  return operand<Formal, tensor_ref<S>>{f.op.name, a.name};
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
  std::string_view kernel;                                  // kernels::X::name
  std::string function;                                     // the AOT function (hf_<function>), e.g. the ffn variant
  std::vector<std::pair<std::string, std::string>> scalars; // formal -> runtime value name
  hana::tuple<Ops...> operands;
};
template <class Kernel, class... Ops>
auto run(const Kernel&, std::string function, std::vector<std::pair<std::string, std::string>> scalars, Ops... ops) {
  return step<Ops...>{Kernel::name, std::move(function), std::move(scalars), hana::make_tuple(std::move(ops)...)};
}

// Output leaves of the kernels (formal), named as in the generators.
namespace out {
inline auto head_layout(const std::string& n) { return make(op::output{n}, shape(d_k, t, heads, batch)); }
inline auto model_layout(const std::string& n) { return make(op::output{n}, shape(d_model, t, batch)); }
} // namespace out

enum class sublayer { self_attention, cross_attention, feed_forward };

// The self-attention block on x (d_model, T, batch) with T = src or tgt; the
// residual-added result is named `y`. Post-LN: y = norm(x + attn(x));
// pre-LN: y = x + attn(norm(x)).
template <class T, class NormFirst>
auto self_attention(T seq, NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                    const std::string& x, const std::string& y, bool causal) {
  kernels::head_projection hp;
  kernels::attention at;
  kernels::out_projection op;
  kernels::layernorm ln;
  const auto model = ref(x, shape(d_model, seq, batch));
  const auto normed = ref(prefix + "normed_in", shape(d_model, seq, batch));
  const auto heads_ = [&](const std::string& n) { return ref(prefix + n, shape(d_k, seq, heads, batch)); };
  const auto w = [&](const std::string& n) { return ref(prefix + n, shape(d_k, heads, d_model)); };
  const auto b = [&](const std::string& n) { return ref(prefix + n, shape(d_k, heads)); };
  const auto attn_in = norm_first ? normed : model;
  const std::string mask = causal ? "causal" : "not_causal";
  auto qkv = run(hp, "qkv_projection", {}, hp.x >> attn_in, hp.weight("w_q") >> w("w_q"), hp.weight("w_k") >> w("w_k"),
                 hp.weight("w_v") >> w("w_v"), hp.bias("b_q") >> b("b_q"), hp.bias("b_k") >> b("b_k"),
                 hp.bias("b_v") >> b("b_v"), out::head_layout("q") >> heads_("q"),
                 out::head_layout("k") >> heads_("k_cache"), out::head_layout("v") >> heads_("v_cache"));
  auto att =
      run(at, "attention", {{"causal", mask}, {"offset", "position"}}, at.q >> heads_("q"), at.k >> heads_("k_cache"),
          at.v >> heads_("v_cache"), at.lengths >> ref(causal ? "tgt_lengths" : "src_lengths", shape(batch)),
          out::head_layout("out") >> heads_("context"));
  const auto summed = ref(norm_first ? y : prefix + "sum", shape(d_model, seq, batch));
  auto proj =
      run(op, "out_projection", {}, op.a >> heads_("context"), op.w >> ref(prefix + "w_o", shape(d_model, d_k, heads)),
          op.b >> ref(prefix + "b_o", shape(d_model)), op.residual >> model, out::model_layout("out") >> summed);
  auto norm = run(ln, "layernorm", {{"eps", "layer_norm_eps"}}, ln.x >> (norm_first ? model : summed),
                  ln.gamma >> ref(norm_weights + ".weight", shape(d_model)),
                  ln.beta >> ref(norm_weights + ".bias", shape(d_model)),
                  out::model_layout("out") >> (norm_first ? normed : ref(y, shape(d_model, seq, batch))));
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(norm, qkv, att, proj);
  else
    return hana::make_tuple(qkv, att, proj, norm);
}

// Cross-attention of decoder states x (d_model, tgt, batch) over the encoder memory
// (d_model, src, batch). K/V of the memory are projected once per source.
template <class NormFirst>
auto cross_attention(NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                     const std::string& x, const std::string& y) {
  kernels::head_projection hp;
  kernels::attention at;
  kernels::out_projection op;
  kernels::layernorm ln;
  const auto model = ref(x, shape(d_model, tgt, batch));
  const auto normed = ref(prefix + "normed_in", shape(d_model, tgt, batch));
  const auto memory = ref("memory", shape(d_model, src, batch));
  const auto w = [&](const std::string& n) { return ref(prefix + n, shape(d_k, heads, d_model)); };
  const auto b = [&](const std::string& n) { return ref(prefix + n, shape(d_k, heads)); };
  const auto q = ref(prefix + "q", shape(d_k, tgt, heads, batch));
  const auto k = ref(prefix + "k_memory", shape(d_k, src, heads, batch));
  const auto v = ref(prefix + "v_memory", shape(d_k, src, heads, batch));
  const auto context = ref(prefix + "context", shape(d_k, tgt, heads, batch));
  auto kv = run(hp, "kv_projection", {}, hp.x >> memory, hp.weight("w_k") >> w("w_k"), hp.weight("w_v") >> w("w_v"),
                hp.bias("b_k") >> b("b_k"), hp.bias("b_v") >> b("b_v"), out::head_layout("k") >> k,
                out::head_layout("v") >> v);
  auto qp = run(hp, "q_projection", {}, hp.x >> (norm_first ? normed : model), hp.weight("w_q") >> w("w_q"),
                hp.bias("b_q") >> b("b_q"), out::head_layout("q") >> q);
  auto att = run(at, "attention", {{"causal", "not_causal"}, {"offset", "zero"}}, at.q >> q, at.k >> k, at.v >> v,
                 at.lengths >> ref("src_lengths", shape(batch)), out::head_layout("out") >> context);
  const auto summed = ref(norm_first ? y : prefix + "sum", shape(d_model, tgt, batch));
  auto proj =
      run(op, "out_projection", {}, op.a >> context, op.w >> ref(prefix + "w_o", shape(d_model, d_k, heads)),
          op.b >> ref(prefix + "b_o", shape(d_model)), op.residual >> model, out::model_layout("out") >> summed);
  auto norm = run(ln, "layernorm", {{"eps", "layer_norm_eps"}}, ln.x >> (norm_first ? model : summed),
                  ln.gamma >> ref(norm_weights + ".weight", shape(d_model)),
                  ln.beta >> ref(norm_weights + ".bias", shape(d_model)),
                  out::model_layout("out") >> (norm_first ? normed : ref(y, shape(d_model, tgt, batch))));
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(kv, norm, qp, att, proj);
  else
    return hana::make_tuple(kv, qp, att, proj, norm);
}

// FFN block: post-LN y = norm(x + ffn(x)); pre-LN y = x + ffn(norm(x)).
template <class T, class NormFirst>
auto feed_forward(T seq, NormFirst norm_first, const std::string& prefix, const std::string& norm_weights,
                  const std::string& x, const std::string& y, const std::string& activation) {
  kernels::ffn f;
  kernels::layernorm ln;
  const auto model = ref(x, shape(d_model, seq, batch));
  const auto normed = ref(prefix + "normed_in", shape(d_model, seq, batch));
  const auto summed = ref(norm_first ? y : prefix + "sum", shape(d_model, seq, batch));
  auto ffn = run(f, "ffn_" + activation, {}, f.x >> (norm_first ? normed : model), f.residual >> model,
                 f.w1 >> ref("linear1.weight", shape(d_ff, d_model)), f.b1 >> ref("linear1.bias", shape(d_ff)),
                 f.w2 >> ref("linear2.weight", shape(d_model, d_ff)), f.b2 >> ref("linear2.bias", shape(d_model)),
                 out::model_layout("out") >> summed);
  auto norm = run(ln, "layernorm", {{"eps", "layer_norm_eps"}}, ln.x >> (norm_first ? model : summed),
                  ln.gamma >> ref(norm_weights + ".weight", shape(d_model)),
                  ln.beta >> ref(norm_weights + ".bias", shape(d_model)),
                  out::model_layout("out") >> (norm_first ? normed : ref(y, shape(d_model, seq, batch))));
  if constexpr (decltype(norm_first)::value)
    return hana::make_tuple(norm, ffn);
  else
    return hana::make_tuple(ffn, norm);
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

// Calls f(step) for each step in order.
template <class Layer, class F> void walk(const Layer& layer, F&& f) { hana::for_each(layer, f); }

// Calls f(formal, actual, is_output) for each tensor operand of a step.
template <class Step, class F> void for_each_operand(const Step& s, F&& f) {
  hana::for_each(s.operands, [&](const auto& op) { f(op.formal, op.actual, op.is_output); });
}

// A step with its types erased, for runtimes that plan kernel calls once.
struct flat_operand {
  std::string formal, actual;
  bool is_output;
  std::vector<std::string> dims; // the actual tensor's dimension symbols, innermost first
};
struct flat_step {
  std::string kernel, function;
  std::vector<std::pair<std::string, std::string>> scalars;
  std::vector<flat_operand> operands;
};
template <class Layer> std::vector<flat_step> flatten(const Layer& layer) {
  std::vector<flat_step> out;
  walk(layer, [&](const auto& s) {
    flat_step f{std::string(s.kernel), s.function, s.scalars, {}};
    hana::for_each(s.operands, [&](const auto& op) {
      using Op = std::decay_t<decltype(op)>;
      const auto names = dim_names(typename Op::actual_shape{});
      f.operands.push_back({op.formal, op.actual, Op::is_output, {names.begin(), names.end()}});
    });
    out.push_back(std::move(f));
  });
  return out;
}

} // namespace halformer::dsl::layers
