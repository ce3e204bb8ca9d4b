// The layers' weight-heavy steps (projections, FFN, logits, embeddings) in one of
// the GEMM compute types (compute_types.hpp): float32 weights, int8 weights
// quantized at load, or bfloat16 weights rounded at load (their embedding
// tables stay float32). A layer description takes the compute type as a
// compile-time tag, so a model's layers name the kernels and weights of its
// type (kernels_gemm.hpp); everything else (LayerNorm, softmax, attention) is
// float32 in all of them.
//
// Weights by name (relative to the layer), of every type in the dot-product
// layout (a weight row is one output's inputs: self_attn.w_q is (d_model, d_k,
// heads)), stored in panels, int8 ones with their steps and value sums, one per
// output, as "<weight>.step" and "<weight>.sums" (aux_name).
#pragma once

#include "halformer/dsl/layer_operands.hpp"

namespace halformer::dsl::layers {

inline constexpr compute::float32 float32_gemms{};
inline constexpr compute::int8 int8_gemms{};
inline constexpr compute::bfloat16 bf16_gemms{};
template <class C> inline constexpr bool is_int8_v = std::is_same_v<C, compute::int8>;

// Attention's keys and values: float32, or float16 (the decoder's caches and its
// cross-attention keys and values at half the bytes, which decode steps read in
// full: attention_f16kv, each projection's rounded by kv_to_float16). A layer
// description takes it as a compile-time tag, as the GEMM type.
enum class kv_type { float32, float16 };
template <kv_type K> using kv_c = std::integral_constant<kv_type, K>;
inline constexpr kv_c<kv_type::float32> float32_kv{};
inline constexpr kv_c<kv_type::float16> float16_kv{};
template <class KV> inline constexpr bool is_f16_kv_v = KV::value == kv_type::float16;

// The model's name of a weight's auxiliary tensor `what` (int8: "step", "sums"):
// the kernels' leaf "<w>_<what>" (compute_types.hpp: aux) of the weight "<w>".
inline std::string aux_name(const std::string& weight, const std::string& what) { return weight + "." + what; }
inline std::string step_name(const std::string& weight) { return aux_name(weight, "step"); }
inline std::string sums_name(const std::string& weight) { return aux_name(weight, "sums"); }

// A GEMM weight's operands: the kernel's weight leaf bound to the model weight
// `name`, and each of its aux leaves "<w>_<what>" (int8) to "<name>.<what>".
template <class W, class Aux, class WS, class AS>
auto gemm_weight_operands(const W& w, const Aux& aux, const std::string& name, WS w_shape, AS aux_shape) {
  const auto bind = [&](const auto& a) {
    const std::string what = a.op.name.substr(w.op.name.size() + 1);
    return a >> weight(aux_name(name, what), aux_shape);
  };
  return hana::prepend(hana::transform(aux, bind), w >> weight(name, w_shape));
}

// Head projections of x (d_model, T, batch) by the kernel Projection in compute
// type C (qkv_projection_in, kv_..., q_...): each output (which, tensor) is the
// projection "q", "k" or "v" in head layout.
template <template <class> class Projection, class C, class X, class... R>
auto head_projection_step(C, const std::string& prefix, const X& x, const std::pair<std::string, R>&... outs) {
  Projection<C> k;
  const auto operands_of = [&](const std::string& which) {
    const std::string w = "w_" + which, b = "b_" + which;
    return hana::append(
        gemm_weight_operands(k.weight(w), k.aux(w), prefix + w, shape(d_model, d_k, heads), shape(d_k, heads)),
        k.bias(b) >> weight(prefix + b, shape(d_k, heads)));
  };
  auto ops = hana::concat(hana::make_tuple(k.x >> x, (out::head_layout(outs.first) >> outs.second)...),
                          hana::flatten(hana::make_tuple(operands_of(outs.first)...)));
  return hana::unpack(ops, [&](auto... o) { return run(k, o...); });
}

// Attention's output projection with the residual: summed = x + context W_o + b_o.
template <class C, class T>
auto out_projection_step(C, T seq, const std::string& prefix, const std::string& context, const std::string& x,
                         const std::string& summed) {
  kernels::out_projection_in<C> k;
  const auto ops = hana::concat(
      hana::make_tuple(k.a >> ref(context, shape(d_k, seq, heads, batch)),
                       k.b >> weight(prefix + "b_o", shape(d_model)), k.residual >> ref(x, shape(d_model, seq, batch)),
                       out::model_layout("out") >> ref(summed, shape(d_model, seq, batch))),
      gemm_weight_operands(k.w, k.w_aux, prefix + "w_o", shape(d_k, heads, d_model), shape(d_model)));
  return hana::unpack(ops, [&](auto... o) { return run(k, o...); });
}

// residual + FFN(x) into `summed`, by ffn_<activation> in compute type C.
template <class C, class T>
auto ffn_step(C, T seq, const std::string& x, const std::string& residual, const std::string& summed,
              const std::string& activation) {
  kernels::ffn_relu_in<C> k; // the interface of every activation's kernel
  const auto ops = hana::concat(
      hana::make_tuple(k.x >> ref(x, shape(d_model, seq, batch)),
                       k.residual >> ref(residual, shape(d_model, seq, batch)),
                       k.b1 >> weight("linear1.bias", shape(d_ff)), k.b2 >> weight("linear2.bias", shape(d_model)),
                       out::model_layout("out") >> ref(summed, shape(d_model, seq, batch))),
      hana::concat(gemm_weight_operands(k.w1, k.w1_aux, "linear1.weight", shape(d_model, d_ff), shape(d_ff)),
                   gemm_weight_operands(k.w2, k.w2_aux, "linear2.weight", shape(d_ff, d_model), shape(d_model))));
  const std::string variant = "ffn_" + activation + std::string(name_in<"", C>);
  return hana::unpack(ops, [&](auto... o) { return run_variant(k, variant, o...); });
}

// The scaled embeddings of the call's tokens (Seq: src or tgt) plus positions from
// `offset`, into `out`: the table float32 (also for bfloat16 GEMMs), or int8
// with a step per entry.
template <class C, class Seq>
auto embedding_step(C, const std::string& table, Seq seq, const scalar_ref& offset, const std::string& out) {
  const auto common = [&](const auto& k) {
    return hana::make_tuple(k.ids >> tokens(shape(seq, batch)), k.scale >> embedding_scale(), k.offset >> offset,
                            k.split_positions >> split_positions(), k.frequency_step >> frequency_step(),
                            out::model_layout("out") >> ref(out, shape(d_model, seq, batch)));
  };
  if constexpr (is_int8_v<C>) {
    kernels::embedding_int8 k;
    return hana::unpack(common(k), [&](auto... o) {
      return run(k, o..., k.table >> weight(table, shape(d_model, vocab)),
                 k.table_step >> weight(step_name(table), shape(vocab)), k.width >> model_width());
    });
  } else {
    kernels::embedding k;
    return hana::unpack(common(k), [&](auto... o) {
      return run(k, o..., k.table >> weight(table, shape(d_model, vocab)), k.vocab_size >> vocabulary(seq));
    });
  }
}

// The logits of x (d_model, tgt, batch).
template <class C> auto logits_step(C, const std::string& x) {
  kernels::logits_in<C> k;
  const auto ops = hana::concat(
      hana::make_tuple(k.x >> ref(x, shape(d_model, tgt, batch)), k.b >> weight("generator.bias", shape(vocab)),
                       out::vocab_layout("out") >> ref("logits", shape(vocab, tgt, batch))),
      gemm_weight_operands(k.w, k.w_aux, "generator.weight", shape(d_model, vocab), shape(vocab)));
  return hana::unpack(ops, [&](auto... o) { return run(k, o...); });
}

} // namespace halformer::dsl::layers
