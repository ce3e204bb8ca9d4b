// The vocabulary of layer descriptions (dsl/layers.hpp): a step runs one kernel on
// operands, each pairing the kernel's formal leaf with a model tensor of a role;
// the formal dimension symbols unify with the actual ones at compile time.
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
  source_scratch,  // computed once per source and read by the per-source steps after it: one
                   // tensor for every layer, sized per source, never kept across calls
  lengths,         // per batch row: source or target lengths (int32)
  kv_rows,         // per key position and batch row: the row of k/v attention reads (int32, dsl::attention)
  constant,        // a scalar fixed by the description (causal, offset 0)
  position,        // a scalar: the first position of this decode call
  decode_step,     // a scalar: whether this decoder call advances each hypothesis by one position
  own_rows,        // a scalar: whether a k/v row table (by its name) is the identity for this call
  layer_norm_eps,  // a scalar: the model configuration's LayerNorm epsilon
  embedding_scale, // a scalar: sqrt(d_model), or 1 where the configuration does not scale embeddings
  split_positions, // a scalar: the configuration's sinusoid layout (true: sines then cosines)
  frequency_step,  // a scalar: the configuration's sinusoid frequency step (pair i: exp(-i step))
  first_position,  // a scalar: the configuration's first position (0; fairseq's pad + 1)
  target_position, // a scalar: this decode call's first position plus first_position
  vocabulary,      // a scalar: a sequence's vocabulary size ("src_vocab", "tgt_vocab")
  model_width,     // a scalar: the configuration's d_model
  tokens,          // the call's token ids (t, batch), int32
  picked,          // greedy decoding's chosen ids (t, batch), int32, written by the step
  choice_input,    // a per-row input of a decode choice the host fills each step, by name
                   // (sampling's draws, forced tokens, banned and penalized token lists)
  decode_option,   // a scalar: the call's decoding option of that name (sampling_topk, ...)
};

// Whether an operand of this role is a scalar argument (not a buffer).
constexpr bool is_scalar(role r) {
  return r == role::constant || r == role::position || r == role::decode_step || r == role::own_rows ||
         r == role::layer_norm_eps || r == role::embedding_scale || r == role::split_positions ||
         r == role::frequency_step || r == role::first_position || r == role::target_position ||
         r == role::vocabulary || r == role::model_width || r == role::decode_option;
}

// Whether a tensor of this role is sized and computed per source (not per row).
constexpr bool from_source(role r) { return r == role::per_source || r == role::source_scratch; }

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
template <class S> tensor_ref<S> source_scratch(std::string name, S) { return {std::move(name), role::source_scratch}; }
inline auto lengths(std::string name) { return tensor_ref<decltype(shape(batch))>{std::move(name), role::lengths}; }
// "src_rows": every key in the query's own row; "tgt_rows": a decoder's self-attention
// cache, whose rows beams share (the runtime keeps the table).
template <class Seq> auto kv_rows(std::string name, Seq seq) {
  return tensor_ref<decltype(shape(seq, batch))>{std::move(name), role::kv_rows};
}
using scalar_ref = tensor_ref<hana::tuple<>>;
inline scalar_ref constant(double v) { return {"constant", role::constant, v}; }
inline scalar_ref position() { return {"position", role::position}; }
inline scalar_ref decode_step() { return {"decode_step", role::decode_step}; }
// Whether the table kv_rows(name, ...) names is the identity (no beam shares a row).
inline scalar_ref own_rows(std::string table) { return {std::move(table), role::own_rows}; }
inline scalar_ref layer_norm_eps() { return {"layer_norm_eps", role::layer_norm_eps}; }
inline scalar_ref embedding_scale() { return {"embedding_scale", role::embedding_scale}; }
inline scalar_ref split_positions() { return {"split_positions", role::split_positions}; }
inline scalar_ref frequency_step() { return {"frequency_step", role::frequency_step}; }
inline scalar_ref first_position() { return {"first_position", role::first_position}; }
inline scalar_ref target_position() { return {"target_position", role::target_position}; }
// The vocabulary of the sequence Seq's tokens (src or tgt).
template <class Seq> scalar_ref vocabulary(Seq) { return {std::string(Seq::type::name) + "_vocab", role::vocabulary}; }
inline scalar_ref model_width() { return {"d_model", role::model_width}; }
template <class S> tensor_ref<S> tokens(S) { return {"tokens", role::tokens}; }
template <class S> tensor_ref<S> picked(S) { return {"picked", role::picked}; }
template <class S> tensor_ref<S> choice_input(std::string name, S) { return {std::move(name), role::choice_input}; }
inline scalar_ref decode_option(std::string name) { return {std::move(name), role::decode_option}; }

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
  int panel_inputs = 0; // a weight in panels (panel_input): its buffer has two dims more
};
template <class Formal, class S> auto operator>>(const Formal& f, const tensor_ref<S>& a) {
  int panel_inputs = 0;
  if constexpr (requires { f.op.panel_inputs; })
    panel_inputs = f.op.panel_inputs;
  return operand<Formal, tensor_ref<S>>{f.op.name, f.op.type, a, panel_inputs};
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
template <dtype D> auto head_layout(const std::string& n, element<D>) {
  return make<element<D>>(op::output{n, D}, shape(d_k, t, heads, batch));
}
inline auto model_layout(const std::string& n) { return make(op::output{n}, shape(d_model, t, batch)); }
inline auto vocab_layout(const std::string& n) { return make(op::output{n}, shape(vocab, t, batch)); }
template <dtype D> auto rows(const std::string& n, element<D>) {
  return make<element<D>>(op::output{n, D}, shape(t, batch));
}
inline auto chunk_layout(const std::string& n) { return make(op::output{n}, shape(chunk, t, batch)); }
} // namespace out

} // namespace halformer::dsl::layers
