// The layers' weight-heavy steps (projections, FFN, logits, embeddings) in one of
// three numeric types: float32 weights, int8 weights quantized at load (the
// *_int8 kernels, dsl/kernels.hpp), or bfloat16 weights rounded at load (the
// *_bf16 kernels, dsl/kernels_bf16.hpp; their embedding tables stay float32).
// A layer description takes the type as a compile-time tag, so a model's layers
// name the kernels and weights of its type; everything else (LayerNorm, softmax,
// attention) is float32 in both.
//
// Weights by name (relative to the layer), of every type in the dot-product
// layout (a weight row is one output's inputs: self_attn.w_q is (d_model, d_k,
// heads)); float32 and int8 ones stored in panels, int8 ones with their steps,
// one per output, as "<weight>.step".
#pragma once

#include "halformer/dsl/layer_operands.hpp"

namespace halformer::dsl::layers {

enum class gemm_type { float32, int8, bf16 };
template <gemm_type G> using gemm_c = std::integral_constant<gemm_type, G>;
inline constexpr gemm_c<gemm_type::float32> float32_gemms{};
inline constexpr gemm_c<gemm_type::int8> int8_gemms{};
inline constexpr gemm_c<gemm_type::bf16> bf16_gemms{};
template <class G> inline constexpr bool is_int8_v = G::value == gemm_type::int8;
template <class G> inline constexpr bool is_bf16_v = G::value == gemm_type::bf16;
// The kernel of GEMM type G among a step's three.
template <class G, class Float, class Int8, class Bf16>
using by_gemm_t = std::conditional_t<is_int8_v<G>, Int8, std::conditional_t<is_bf16_v<G>, Bf16, Float>>;

// Attention's keys and values: float32, or float16 (the decoder's caches and its
// cross-attention keys and values at half the bytes, which decode steps read in
// full: attention_f16kv, each projection's rounded by kv_to_float16). A layer
// description takes it as a compile-time tag, as the GEMM type.
enum class kv_type { float32, float16 };
template <kv_type K> using kv_c = std::integral_constant<kv_type, K>;
inline constexpr kv_c<kv_type::float32> float32_kv{};
inline constexpr kv_c<kv_type::float16> float16_kv{};
template <class KV> inline constexpr bool is_f16_kv_v = KV::value == kv_type::float16;

// The name a weight's int8 steps go by.
inline std::string step_name(const std::string& weight) { return weight + ".step"; }

// One head projection's operands ("q", "k" or "v"): weight, (steps,) bias.
template <class K, class G> auto head_weights(const K& k, G, const std::string& prefix, const std::string& which) {
  const std::string w = "w_" + which, b = "b_" + which;
  const auto bias = k.bias(b) >> weight(prefix + b, shape(d_k, heads));
  if constexpr (is_int8_v<G>)
    return hana::make_tuple(k.weight(w) >> weight(prefix + w, shape(d_model, d_k, heads)),
                            k.step(w + "_step") >> weight(step_name(prefix + w), shape(d_k, heads)), bias);
  else
    return hana::make_tuple(k.weight(w) >> weight(prefix + w, shape(d_model, d_k, heads)), bias);
}

// Head projections of x (d_model, T, batch): each output (which, tensor) is the
// projection "q", "k" or "v" in head layout, by the kernel Float, Int8 or Bf16 of
// the GEMM type (qkv_projection[_int8|_bf16], kv_..., q_...).
template <class Float, class Int8, class Bf16, class G, class X, class... R>
auto head_projection_step(G g, const std::string& prefix, const X& x, const std::pair<std::string, R>&... outs) {
  using K = by_gemm_t<G, Float, Int8, Bf16>;
  K k;
  auto ops = hana::concat(hana::make_tuple(k.x >> x, (out::head_layout(outs.first) >> outs.second)...),
                          hana::flatten(hana::make_tuple(head_weights(k, g, prefix, outs.first)...)));
  return hana::unpack(ops, [&](auto... o) { return run(k, o...); });
}

// Attention's output projection with the residual: summed = x + context W_o + b_o.
template <class G, class T>
auto out_projection_step(G, T seq, const std::string& prefix, const std::string& context, const std::string& x,
                         const std::string& summed) {
  const auto common = [&](const auto& k) {
    return hana::make_tuple(k.a >> ref(context, shape(d_k, seq, heads, batch)),
                            k.b >> weight(prefix + "b_o", shape(d_model)),
                            k.residual >> ref(x, shape(d_model, seq, batch)),
                            out::model_layout("out") >> ref(summed, shape(d_model, seq, batch)));
  };
  if constexpr (is_int8_v<G>) {
    kernels::out_projection_int8 k;
    return hana::unpack(common(k), [&](auto... o) {
      return run(k, o..., k.w >> weight(prefix + "w_o", shape(d_k, heads, d_model)),
                 k.w_step >> weight(step_name(prefix + "w_o"), shape(d_model)));
    });
  } else {
    by_gemm_t<G, kernels::out_projection, void, kernels::out_projection_bf16> k;
    return hana::unpack(
        common(k), [&](auto... o) { return run(k, o..., k.w >> weight(prefix + "w_o", shape(d_k, heads, d_model))); });
  }
}

// residual + FFN(x) into `summed`, by ffn_<activation>[_int8|_bf16].
template <class G, class T>
auto ffn_step(G, T seq, const std::string& x, const std::string& residual, const std::string& summed,
              const std::string& activation) {
  const auto common = [&](const auto& k) {
    return hana::make_tuple(k.x >> ref(x, shape(d_model, seq, batch)),
                            k.residual >> ref(residual, shape(d_model, seq, batch)),
                            k.b1 >> weight("linear1.bias", shape(d_ff)), k.b2 >> weight("linear2.bias", shape(d_model)),
                            out::model_layout("out") >> ref(summed, shape(d_model, seq, batch)));
  };
  if constexpr (is_int8_v<G>) {
    kernels::ffn_int8 k;
    return hana::unpack(common(k), [&](auto... o) {
      return run_variant(k, "ffn_" + activation + "_int8", o..., k.w1 >> weight("linear1.weight", shape(d_model, d_ff)),
                         k.w1_step >> weight(step_name("linear1.weight"), shape(d_ff)),
                         k.w2 >> weight("linear2.weight", shape(d_ff, d_model)),
                         k.w2_step >> weight(step_name("linear2.weight"), shape(d_model)));
    });
  } else {
    by_gemm_t<G, kernels::ffn, void, kernels::ffn_bf16> k;
    const std::string variant = "ffn_" + activation + (is_bf16_v<G> ? "_bf16" : "");
    return hana::unpack(common(k), [&](auto... o) {
      return run_variant(k, variant, o..., k.w1 >> weight("linear1.weight", shape(d_model, d_ff)),
                         k.w2 >> weight("linear2.weight", shape(d_ff, d_model)));
    });
  }
}

// The scaled embeddings of the call's tokens (Seq: src or tgt) plus positions from
// `offset`, into `out`: the table float32, or int8 with a step per entry.
template <class G, class Seq>
auto embedding_step(G, const std::string& table, Seq seq, const scalar_ref& offset, const std::string& out) {
  const auto common = [&](const auto& k) {
    return hana::make_tuple(k.ids >> tokens(shape(seq, batch)), k.scale >> embedding_scale(), k.offset >> offset,
                            k.split_positions >> split_positions(),
                            out::model_layout("out") >> ref(out, shape(d_model, seq, batch)));
  };
  if constexpr (is_int8_v<G>) {
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
template <class G> auto logits_step(G, const std::string& x) {
  const auto common = [&](const auto& k) {
    return hana::make_tuple(k.x >> ref(x, shape(d_model, tgt, batch)), k.b >> weight("generator.bias", shape(vocab)),
                            out::vocab_layout("out") >> ref("logits", shape(vocab, tgt, batch)));
  };
  if constexpr (is_int8_v<G>) {
    kernels::logits_int8 k;
    return hana::unpack(common(k), [&](auto... o) {
      return run(k, o..., k.w >> weight("generator.weight", shape(d_model, vocab)),
                 k.w_step >> weight(step_name("generator.weight"), shape(vocab)));
    });
  } else {
    by_gemm_t<G, kernels::logits, void, kernels::logits_bf16> k;
    return hana::unpack(
        common(k), [&](auto... o) { return run(k, o..., k.w >> weight("generator.weight", shape(d_model, vocab))); });
  }
}

} // namespace halformer::dsl::layers
