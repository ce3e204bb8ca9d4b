// Dimension symbols and the static shape algebra of the halformer DSL.
//
// A shape is a hana::tuple of hana::type<Dim>, innermost dimension first (Halide
// order). Every check below is a constant expression, so a contraction or an add
// over mismatched dimensions is rejected by the compiler, with the offending
// dimension names visible in the diagnostic.
#pragma once

#include <boost/hana.hpp>

#include <array>
#include <string_view>

namespace halformer::dsl {

namespace hana = boost::hana;

// Declares a dimension symbol: a tag type `NAME##_dim` with its name, and a value
// `NAME` usable in shape expressions (`shape(d_model, t, batch)`).
#define HALFORMER_DIM(NAME)                                                                                            \
  struct NAME##_dim {                                                                                                  \
    static constexpr std::string_view name = #NAME;                                                                    \
  };                                                                                                                   \
  inline constexpr auto NAME = ::boost::hana::type_c<NAME##_dim>

// The axes every halformer kernel, schedule, tuner bucket and runtime view uses.
namespace dims {
HALFORMER_DIM(d_model); // model width
HALFORMER_DIM(d_k);     // per-head width (d_model / heads)
HALFORMER_DIM(heads);   // attention heads
HALFORMER_DIM(d_ff);    // FFN inner width
HALFORMER_DIM(d_out);   // output features of a generic linear layer
HALFORMER_DIM(t);       // token position (queries / the sequence being processed)
HALFORMER_DIM(tk);      // key position (attention keys and values)
HALFORMER_DIM(batch);   // sentence in the batch (batch x beam when decoding)
HALFORMER_DIM(kv_row);  // a row of attention's keys and values, which a table names per (key, batch row)
HALFORMER_DIM(vocab);   // vocabulary entry
HALFORMER_DIM(chunk);   // a chunk of consecutive entries of a row (beam search's candidates)
HALFORMER_DIM(rule);    // one of a row's listed tokens (sampling's banned or penalized ones)
// Sequence axes of a sequence-to-sequence model; kernels' formal t/tk bind to them.
HALFORMER_DIM(src); // source position (encoder)
HALFORMER_DIM(tgt); // target position (decoder)
} // namespace dims

template <class... D> constexpr auto shape(D... d) { return hana::make_tuple(d...); }

template <class S> using shape_of = std::decay_t<S>;

template <class S> constexpr std::size_t rank_v = decltype(hana::length(S{}))::value;

// Names of a shape's dimensions, innermost first (for lowering and messages).
template <class S> constexpr auto dim_names(S s) {
  return hana::unpack(s,
                      [](auto... d) { return std::array<std::string_view, sizeof...(d)>{decltype(d)::type::name...}; });
}

template <class S, class D> constexpr bool has_dim_v = decltype(hana::contains(S{}, D{}))::value;

// Position of dimension D in shape S (S must contain D).
template <class S, class D>
constexpr std::size_t index_of_v = [] {
  constexpr auto names = dim_names(S{});
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == D::type::name)
      return i;
  return names.size();
}();

template <class A, class B> constexpr bool same_shape_v = std::is_same_v<A, B>;

// Same dimensions, any order.
template <class A, class B>
constexpr bool is_permutation_v =
    rank_v<A> == rank_v<B>&& decltype(hana::all_of(A{}, [](auto d) { return hana::contains(B{}, d); }))::value;

// Dimensions of A that are also in B, in A's order.
template <class A, class B> constexpr auto common(A a, B) {
  return hana::filter(a, [](auto d) { return hana::contains(B{}, d); });
}

// Dimensions of A that are not in B, in A's order.
template <class A, class B> constexpr auto minus(A a, B) {
  return hana::filter(a, [](auto d) { return hana::not_(hana::contains(B{}, d)); });
}

template <class A, class B>
constexpr bool is_subset_v = decltype(hana::all_of(A{}, [](auto d) { return hana::contains(B{}, d); }))::value;

} // namespace halformer::dsl
