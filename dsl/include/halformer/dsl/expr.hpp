// The halformer tensor-expression graph.
//
// An expression is a value of type tensor<Op, Shape, Element, Args...>: the
// operation, the static shape (dimension symbols, innermost first), the element
// type and its operands. Building an expression checks shapes and element types at
// compile time; nothing here depends on Halide, so the runtime can walk the same
// graphs that the generators lower (see lower.hpp).
#pragma once

#include "halformer/dsl/panels.hpp"

#include "halformer/dsl/dims.hpp"
#include "halformer/dsl/ops.hpp"

#include <string>
#include <vector>

namespace halformer::dsl {

// Element types as types, one per dtype: an expression's element type is part of
// its C++ type, so an int8 tensor meeting a float one without quantize or
// dequantize between them (or a bfloat16 or float16 one without to_bfloat16 or
// to_float16) fails to compile, as a shape mismatch does.
template <dtype D> struct element { static constexpr dtype value = D; };
inline constexpr element<dtype::f32> f32{};
inline constexpr element<dtype::i32> i32{};
inline constexpr element<dtype::i8> i8{};
inline constexpr element<dtype::bf16> bf16{};
inline constexpr element<dtype::f16> f16{};
inline constexpr element<dtype::boolean> boolean{};

template <class Op, class Shape, class Element, class... Args> struct tensor {
  using op_type = Op;
  using shape_type = Shape;
  using element_type = Element;
  static constexpr Shape shape{};
  static constexpr std::size_t rank = rank_v<Shape>;
  Op op;
  hana::tuple<Args...> args;
};

template <class T> struct is_tensor : std::false_type {};
template <class Op, class S, class E, class... A> struct is_tensor<tensor<Op, S, E, A...>> : std::true_type {};
template <class T>
concept Tensor = is_tensor<std::decay_t<T>>::value;

template <Tensor T> using shape_t = typename std::decay_t<T>::shape_type;
template <Tensor T> using element_t = typename std::decay_t<T>::element_type;
template <Tensor T> inline constexpr dtype dtype_v = element_t<T>::value;

// Whether every operand holds float32: what the float operations take (an integer
// tensor reaches them only through dequantize).
template <class... T> inline constexpr bool all_float_v = ((dtype_v<T> == dtype::f32) && ...);

template <class Element = element<dtype::f32>, class Op, class Shape, class... Args>
constexpr auto make(Op o, Shape, Args... a) {
  return tensor<Op, Shape, Element, Args...>{std::move(o), hana::make_tuple(std::move(a)...)};
}

// ---- leaves ---------------------------------------------------------------------

// A kernel's leaf member, declared once: HF_LEAF(x, input("x", shape(d_model, t)))
// gives the member `x` the expression's type and value (a non-static member
// cannot be `auto`, so without it the expression is written twice).
#define HF_LEAF(member, ...) decltype(__VA_ARGS__) member = __VA_ARGS__

template <class S, dtype D = dtype::f32> auto input(std::string name, S s, element<D> = {}) {
  return make<element<D>>(op::input{std::move(name), D}, s);
}
// A GEMM weight (int8 by default, bfloat16 or float32) of logical shape
// (inputs..., outputs...), its first `inputs` dims indexing the input, stored in
// panels (panels.hpp): the buffer has two dims more than the shape.
template <class S, dtype D = dtype::i8> auto panel_input(std::string name, S s, int inputs, element<D> = {}) {
  static_assert(D == dtype::i8 || D == dtype::bf16 || D == dtype::f32,
                "halformer::dsl::panel_input: panels hold int8, bfloat16 or float32 weights");
  return make<element<D>>(op::input{std::move(name), D, inputs}, s);
}
template <dtype D = dtype::f32> auto param(std::string name, element<D> = {}) {
  return make<element<D>>(op::param{std::move(name), D}, hana::make_tuple());
}
// The extent of dimension `dim` as an int32 scalar argument "<dim>_size", for a
// dimension no buffer holds exactly: a weight in panels pads its outputs to
// whole panel groups, so the embedding's table in panels cannot say its
// vocabulary (whose end its token id check needs), nor an int8 table its width.
// Not named as the dimension: a Halide parameter and a Func's pure Var of one
// name are one variable to the simplifier (the positions' `d < (d_model + 1) / 2`
// became constant).
template <class Dim> auto extent_param(Dim) {
  const std::string dim{Dim::type::name};
  return make<element<dtype::i32>>(op::param{dim + "_size", dtype::i32, dim}, hana::make_tuple());
}

// ---- linear algebra ----------------------------------------------------------------

// The element type of a contraction of A with B: float32 of float32 operands and
// of bfloat16 ones (float32 sums of exact products), int32 (exact accumulation)
// of int8 ones; void for a mixed pair.
template <class A, class B> constexpr auto contraction_element() {
  if constexpr (all_float_v<A, B>)
    return element<dtype::f32>{};
  else if constexpr (dtype_v<A> == dtype::bf16 && dtype_v<B> == dtype::bf16)
    return element<dtype::f32>{};
  else if constexpr (dtype_v<A> == dtype::i8 && dtype_v<B> == dtype::i8)
    return element<dtype::i32>{};
}

// out(Out) = sum over (dims of A and B not in Out) of a * b  [+ bias(Bias)]. Two
// int8 operands accumulate exactly in int32; an int8 operand meets a float one
// only after quantize (or its result after dequantize).
template <Tensor A, Tensor B, class Out> auto contract(std::string name, A a, B b, Out out) {
  using SA = shape_t<A>;
  using SB = shape_t<B>;
  using Element = decltype(contraction_element<A, B>());
  static_assert(!std::is_void_v<Element>,
                "halformer::dsl::contract: operands of different element types (an int8 operand with a float "
                "one: quantize the float operand, or contract two int8 operands and dequantize the int32 "
                "result; a bfloat16 operand with a float32 one: to_bfloat16 the float32 operand)");
  static_assert(is_subset_v<Out, decltype(hana::concat(SA{}, SB{}))>,
                "halformer::dsl::contract: the result names a dimension neither operand has");
  static_assert(decltype(hana::length(minus(common(SA{}, SB{}), Out{})))::value > 0,
                "halformer::dsl::contract: the operands share no dimension to contract over "
                "(mismatched dimensions)");
  static_assert(is_subset_v<decltype(minus(SA{}, SB{})), Out> && is_subset_v<decltype(minus(SB{}, SA{})), Out>,
                "halformer::dsl::contract: a dimension of only one operand is missing from the "
                "result (it would be summed without a partner: mismatched dimensions)");
  return make<Element>(op::contract{std::move(name)}, out, std::move(a), std::move(b));
}

// The dot-product layout of a GEMM weight W (linear, quantized_linear,
// bf16_linear): its leading dimensions are the input features it shares with x
// (x's dim 0 one of them), its others the outputs: a weight row is one output's
// inputs, PyTorch's [out][in] as it is, stored in panels (panel_input) or rows.
// The result holds W's output dimensions, then x's rows (its other dimensions),
// unless `out` reorders them (e.g. a head layout (d_k, t, heads, batch)).
template <Tensor X, Tensor W> using features_t = decltype(common(shape_t<X>{}, shape_t<W>{}));
template <Tensor X, Tensor W>
inline constexpr bool dot_product_weight_v =
    rank_v<features_t<X, W>> > 0 &&
    is_permutation_v<decltype(hana::take_front(shape_t<W>{}, hana::size_c<rank_v<features_t<X, W>>>)),
                     features_t<X, W>>&& decltype(hana::contains(features_t<X, W>{}, hana::front(shape_t<X>{})))::value;
// W's dimensions that X lacks: its output dimensions, in W's order.
template <Tensor X, Tensor W> using weight_outputs_t = decltype(minus(shape_t<W>{}, shape_t<X>{}));
// X's dimensions that W lacks: its rows.
template <Tensor X, Tensor W> using input_rows_t = decltype(minus(shape_t<X>{}, shape_t<W>{}));
template <Tensor X, Tensor W>
using linear_shape_t = decltype(hana::concat(weight_outputs_t<X, W>{}, input_rows_t<X, W>{}));

// y = x . W + bias, float32, W in the dot-product layout (above). Stage <name>;
// a weight in panels starts each output's sum at its bias (lower_panels.hpp).
template <Tensor X, Tensor W, Tensor Bias, class Out> auto linear(std::string name, X x, W w, Bias bias, Out out) {
  static_assert(dot_product_weight_v<X, W>,
                "halformer::dsl::linear: the weight's leading (input) dimensions must be the features it shares "
                "with the input, and the input's dim 0 one of them");
  static_assert(is_permutation_v<Out, linear_shape_t<X, W>>,
                "halformer::dsl::linear: the result must hold exactly the weight's output "
                "dimensions and the input's rows");
  static_assert(std::is_same_v<shape_t<Bias>, weight_outputs_t<X, W>>,
                "halformer::dsl::linear: the bias must have the weight's output dimensions");
  static_assert(all_float_v<X, W, Bias>,
                "halformer::dsl::linear: x, the weight and the bias must be float32 (int8 weights: "
                "quantized_linear)");
  (void)contract(name, x, w, out); // the same checks as a plain contraction
  return make(op::contract{std::move(name), op::contract_third::bias}, out, std::move(x), std::move(w),
              std::move(bias));
}
template <Tensor X, Tensor W, Tensor Bias> auto linear(std::string name, X x, W w, Bias bias) {
  return linear(std::move(name), std::move(x), std::move(w), std::move(bias), linear_shape_t<X, W>{});
}

template <Tensor A, class Out> auto transpose(std::string name, A a, Out out) {
  static_assert(is_permutation_v<Out, shape_t<A>>,
                "halformer::dsl::transpose: the result must be a permutation of the operand's "
                "dimensions");
  return make(op::transpose{std::move(name)}, out, std::move(a));
}

// ---- elementwise -------------------------------------------------------------------

template <Tensor A, Tensor B> auto add(std::string name, A a, B b) {
  static_assert(same_shape_v<shape_t<A>, shape_t<B>>,
                "halformer::dsl::add: operands must have the same dimensions in the same order");
  static_assert(all_float_v<A, B>, "halformer::dsl::add: operands must be float32 (dequantize an integer one first)");
  return make(op::add{std::move(name)}, shape_t<A>{}, std::move(a), std::move(b));
}

// a + b where b's dimensions are a subset of a's (a bias, a positional table).
template <Tensor A, Tensor B> auto add_broadcast(std::string name, A a, B b) {
  static_assert(is_subset_v<shape_t<B>, shape_t<A>>,
                "halformer::dsl::add_broadcast: every dimension of the broadcast operand must be "
                "a dimension of the other operand");
  static_assert(all_float_v<A, B>,
                "halformer::dsl::add_broadcast: operands must be float32 (dequantize an integer one first)");
  return make(op::add_broadcast{std::move(name)}, shape_t<A>{}, std::move(a), std::move(b));
}

template <Tensor A, Tensor S> auto scale(std::string name, A a, S s) {
  static_assert(rank_v<shape_t<S>> == 0, "halformer::dsl::scale: the factor must be a scalar");
  static_assert(all_float_v<A, S>, "halformer::dsl::scale: operands must be float32");
  return make(op::scale{std::move(name)}, shape_t<A>{}, std::move(a), std::move(s));
}

template <Tensor A> auto activate(std::string name, op::activation fn, A a) {
  static_assert(all_float_v<A>, "halformer::dsl::activate: the operand must be float32");
  return make(op::unary{std::move(name), fn}, shape_t<A>{}, std::move(a));
}
template <Tensor A> auto relu(std::string name, A a) { return activate(std::move(name), op::activation::relu, a); }
template <Tensor A> auto gelu(std::string name, A a) { return activate(std::move(name), op::activation::gelu, a); }
template <Tensor A> auto silu(std::string name, A a) { return activate(std::move(name), op::activation::silu, a); }

// ---- normalisations ----------------------------------------------------------------

// The mask vocabulary shared by softmax and attention: position k of row (q, b) is
// valid iff k < lengths(b) and, when causal != 0, k <= q + offset. A row with no
// valid position yields zeros (softmax) or the lowest float (log-softmax).
template <Tensor X, Tensor L, Tensor C, Tensor O>
auto masked_softmax(std::string name, X x, L lengths, C causal, O offset, bool log = false) {
  using SX = shape_t<X>;
  static_assert(rank_v<SX> == 3, "halformer::dsl::masked_softmax: expects (keys, rows, batch)");
  static_assert(std::is_same_v<shape_t<L>, decltype(hana::make_tuple(hana::back(SX{})))>,
                "halformer::dsl::masked_softmax: lengths must be indexed by the batch dimension");
  static_assert(rank_v<shape_t<C>> == 0 && rank_v<shape_t<O>> == 0,
                "halformer::dsl::masked_softmax: causal and offset are scalars");
  static_assert(all_float_v<X>, "halformer::dsl::masked_softmax: x must be float32");
  return make(op::softmax{std::move(name), log}, SX{}, std::move(x), std::move(lengths), std::move(causal),
              std::move(offset));
}

template <Tensor X, Tensor G, Tensor B, Tensor E> auto layernorm(std::string name, X x, G gamma, B beta, E eps) {
  using Feature = decltype(hana::make_tuple(hana::front(shape_t<X>{})));
  static_assert(std::is_same_v<shape_t<G>, Feature> && std::is_same_v<shape_t<B>, Feature>,
                "halformer::dsl::layernorm: gamma and beta must be indexed by the input's dim 0");
  static_assert(rank_v<shape_t<E>> == 0, "halformer::dsl::layernorm: eps is a scalar");
  static_assert(all_float_v<X, G, B, E>, "halformer::dsl::layernorm: x, gamma, beta and eps must be float32");
  return make(op::layernorm{std::move(name)}, shape_t<X>{}, std::move(x), std::move(gamma), std::move(beta),
              std::move(eps));
}

// ---- embeddings --------------------------------------------------------------------

// table (d, vocab), ids (t, batch) -> (d, t, batch). Ids outside [0, vocab) are a
// kernel error, never a read out of bounds.
template <Tensor Table, Tensor Ids> auto gather(std::string name, Table table, Ids ids) {
  static_assert(rank_v<shape_t<Table>> == 2, "halformer::dsl::gather: the table is (d, vocab)");
  static_assert(all_float_v<Table> && dtype_v<Ids> == dtype::i32,
                "halformer::dsl::gather: the table is float32, the ids int32");
  using Out = decltype(hana::prepend(shape_t<Ids>{}, hana::front(shape_t<Table>{})));
  return make(op::gather{std::move(name)}, Out{}, std::move(table), std::move(ids));
}

// Sinusoidal positions (d, t) for positions offset .. offset + extent(t) - 1, in the
// layout a boolean scalar `split` chooses, pair i at the frequency
// exp(-i * step) (op::sinusoidal).
template <class D, class T, Tensor O, Tensor S, Tensor F>
auto sinusoidal(std::string name, D d, T t, O offset, S split, F step) {
  static_assert(rank_v<shape_t<O>> == 0 && rank_v<shape_t<S>> == 0 && rank_v<shape_t<F>> == 0,
                "halformer::dsl::sinusoidal: the offset, the layout and the frequency step are scalars");
  return make(op::sinusoidal{std::move(name)}, hana::make_tuple(d, t), std::move(offset), std::move(split),
              std::move(step));
}

// ---- attention -----------------------------------------------------------------------

// Scaled dot-product attention over all heads of a batch:
// q (d_k, t, heads, batch); k and v (d_k, tk, heads, kv_row), whose row for key
// position j of query row b is kv_rows(j, b) (int32, (tk, batch)): a beam's cache
// is a tree of rows that share their prefixes, so reordering beams rewrites this
// table and copies no keys (an identity table reads row b). lengths (batch) masks
// keys >= length, causal masks keys > query + offset. Result (d_k, t, heads, batch).
// k and v may be float16 (a cache of half the bytes, dsl/float16.hpp): each is
// widened to float32 where it is read, and the arithmetic stays float32.
// decode_step (boolean) says the call's queries are one decode step's hypotheses
// (one position per row, or a source's beams as the queries of its
// cross-attention): lowering::attention_takes_direct says what it decides.
// own_rows (boolean) says the table is the identity (kv_rows(j, b) = b: no beam
// shares a row), so a schedule may read each row's keys by address; a caller
// that says so of another table reads wrong rows (still inside k and v).
template <Tensor Q, Tensor K, Tensor V, Tensor R, Tensor L, Tensor C, Tensor O, Tensor S, Tensor W>
auto attention(std::string name, Q q, K k, V v, R kv_rows, L lengths, C causal, O offset, S decode_step, W own_rows) {
  using namespace dims;
  static_assert(std::is_same_v<shape_t<Q>, decltype(shape(d_k, t, heads, batch))>,
                "halformer::dsl::attention: q must be (d_k, t, heads, batch)");
  static_assert(std::is_same_v<shape_t<K>, decltype(shape(d_k, tk, heads, kv_row))>,
                "halformer::dsl::attention: k must be (d_k, tk, heads, kv_row)");
  static_assert(std::is_same_v<shape_t<V>, shape_t<K>>, "halformer::dsl::attention: v must have k's shape");
  static_assert(std::is_same_v<shape_t<R>, decltype(shape(tk, batch))>,
                "halformer::dsl::attention: kv_rows must be (tk, batch)");
  static_assert(std::is_same_v<shape_t<L>, decltype(shape(batch))>,
                "halformer::dsl::attention: lengths must be (batch)");
  static_assert(all_float_v<Q> && dtype_v<K> == dtype_v<V> && (dtype_v<K> == dtype::f32 || dtype_v<K> == dtype::f16),
                "halformer::dsl::attention: q must be float32, k and v both float32 or both float16");
  static_assert(dtype_v<R> == dtype::i32 && dtype_v<L> == dtype::i32,
                "halformer::dsl::attention: kv_rows and lengths must be int32");
  static_assert(rank_v<shape_t<W>> == 0, "halformer::dsl::attention: own_rows is a scalar");
  return make(op::attention{std::move(name)}, shape_t<Q>{}, std::move(q), std::move(k), std::move(v),
              std::move(kv_rows), std::move(lengths), std::move(causal), std::move(offset), std::move(decode_step),
              std::move(own_rows));
}

// ---- greedy choice ----------------------------------------------------------------

// Reductions along dim 0 that leave the other dimensions: the winning index (int32
// values) and its log-probability, what greedy decoding needs of a logits row.
template <Tensor X> auto argmax(std::string name, X x) {
  using SX = shape_t<X>;
  static_assert(rank_v<SX> >= 1, "halformer::dsl::argmax: needs a dimension to reduce");
  static_assert(all_float_v<X>, "halformer::dsl::argmax: x must be float32");
  return make<element<dtype::i32>>(op::argmax{std::move(name)}, hana::drop_front(SX{}), std::move(x));
}
template <Tensor X> auto max_log_prob(std::string name, X x) {
  using SX = shape_t<X>;
  static_assert(rank_v<SX> >= 1, "halformer::dsl::max_log_prob: needs a dimension to reduce");
  static_assert(all_float_v<X>, "halformer::dsl::max_log_prob: x must be float32");
  return make(op::max_log_prob{std::move(name)}, hana::drop_front(SX{}), std::move(x));
}

// Dim 0 in chunks of `size` (a `chunk` dimension in its place): each chunk's largest
// element. The chunks that can hold a row's best n elements are those whose
// maximum is at least the n-th largest chunk maximum; only they need be read.
template <Tensor X> auto chunk_max(std::string name, X x, int size) {
  using SX = shape_t<X>;
  static_assert(rank_v<SX> >= 1, "halformer::dsl::chunk_max: needs a dimension to cut into chunks");
  static_assert(all_float_v<X>, "halformer::dsl::chunk_max: x must be float32");
  return make(op::chunk_max{std::move(name), size}, hana::prepend(hana::drop_front(SX{}), dims::chunk), std::move(x));
}

// ---- kernel interfaces ----------------------------------------------------------------

// A kernel's output: the argument name of the compiled function, and its value.
template <Tensor E> struct named_result {
  std::string name;
  E value;
};
template <Tensor E> named_result<E> result(std::string name, E value) { return {std::move(name), std::move(value)}; }

// One argument of a compiled kernel, with its type erased: what a generator adds
// as an Input or Output, and what a caller binds by name. No dims: a scalar.
struct argument {
  std::string name;
  dtype type;
  std::vector<std::string> dims; // innermost first
  int panel_inputs = 0;          // panel_input: stored in panels (two dims more than `dims`)
  std::string extent_of;         // extent_param: the dimension whose extent the scalar gives
  // The buffer's rank.
  int rank() const { return int(dims.size()) + (panel_inputs > 0 ? panels::extra_dims : 0); }
};
template <class Op, class S, class E> argument describe(const tensor<Op, S, E>& leaf) {
  static_assert(std::is_same_v<Op, op::input> || std::is_same_v<Op, op::param>,
                "halformer::dsl::describe: a kernel's inputs are input and param leaves");
  const auto names = dim_names(S{});
  if constexpr (std::is_same_v<Op, op::input>)
    return {leaf.op.name, leaf.op.type, {names.begin(), names.end()}, leaf.op.panel_inputs};
  else
    return {leaf.op.name, leaf.op.type, {names.begin(), names.end()}, 0, leaf.op.extent_of};
}
template <Tensor E> argument describe(const named_result<E>& r) {
  const auto names = dim_names(shape_t<E>{});
  return {r.name, dtype_v<E>, {names.begin(), names.end()}};
}

} // namespace halformer::dsl
