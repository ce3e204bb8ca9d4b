// Random sampling's expressions (lowered by lower_sampling.hpp): a token per row
// of logits, and a token's log-probability, with the decoding rules that change
// a row's distribution given as short per-row token lists, so that only two
// numbers per row leave the device.
#pragma once

#include "halformer/dsl/expr.hpp"

namespace halformer::dsl {

// The token of each row of logits x (vocab, rows...):
// - the row's logits with the repetition penalty on the tokens `penalized` (rule,
//   rows...) lists (x / penalty where x > 0, x * penalty elsewhere, as CTranslate2
//   and transformers), the tokens `banned` lists excluded; -1 pads both lists;
// - the top_k best (0: all; ties: the lower id), then the fewest best of those whose
//   probabilities at `temperature` reach top_p of their sum (1: all);
// - drawn by the inverse of their cumulative distribution in vocabulary order at
//   the row's number `draws` in [0, 1) (the same draw in any batch or chunk);
// - the row's `forced` token (a target prefix's) where it is >= 0.
// -1 where every token is banned.
template <Tensor X, Tensor U, Tensor F, Tensor B, Tensor P, Tensor K, Tensor TP, Tensor T, Tensor R>
auto sample_token(std::string name, X x, U draws, F forced, B banned, P penalized, K top_k, TP top_p, T temperature,
                  R penalty) {
  using SX = shape_t<X>;
  using Rows = decltype(hana::drop_front(SX{}));
  static_assert(rank_v<SX> >= 1 && all_float_v<X, U>, "halformer::dsl::sample_token: x and draws must be float32");
  static_assert(std::is_same_v<shape_t<U>, Rows> && std::is_same_v<shape_t<F>, Rows>,
                "halformer::dsl::sample_token: draws and forced have x's rows");
  using Lists = decltype(hana::prepend(Rows{}, dims::rule));
  static_assert(std::is_same_v<shape_t<B>, Lists> && std::is_same_v<shape_t<P>, Lists>,
                "halformer::dsl::sample_token: banned and penalized are (rule, rows...)");
  static_assert(dtype_v<F> == dtype::i32 && dtype_v<B> == dtype::i32 && dtype_v<P> == dtype::i32,
                "halformer::dsl::sample_token: forced, banned and penalized hold int32 token ids");
  static_assert(rank_v<shape_t<K>> == 0 && rank_v<shape_t<TP>> == 0 && rank_v<shape_t<T>> == 0 &&
                    rank_v<shape_t<R>> == 0 && dtype_v<K> == dtype::i32 && all_float_v<TP, T, R>,
                "halformer::dsl::sample_token: top_k (int32), top_p, temperature and penalty are scalars");
  return make<element<dtype::i32>>(op::sample_token{std::move(name)}, Rows{}, std::move(x), std::move(draws),
                                   std::move(forced), std::move(banned), std::move(penalized), std::move(top_k),
                                   std::move(top_p), std::move(temperature), std::move(penalty));
}

// log p(ids) of each row of x under the repetition penalty on `penalized` (as
// sample_token's; each token listed once), normalized over the whole vocabulary
// (banned tokens included: the log-probabilities greedy and beam search report).
template <Tensor X, Tensor P, Tensor R, Tensor I>
auto token_log_prob(std::string name, X x, P penalized, R penalty, I ids) {
  using SX = shape_t<X>;
  using Rows = decltype(hana::drop_front(SX{}));
  static_assert(rank_v<SX> >= 1 && all_float_v<X, R>, "halformer::dsl::token_log_prob: x must be float32");
  static_assert(std::is_same_v<shape_t<P>, decltype(hana::prepend(Rows{}, dims::rule))> && dtype_v<P> == dtype::i32,
                "halformer::dsl::token_log_prob: penalized is (rule, rows...) int32");
  static_assert(std::is_same_v<shape_t<I>, Rows> && dtype_v<I> == dtype::i32 && rank_v<shape_t<R>> == 0,
                "halformer::dsl::token_log_prob: ids (int32) has x's rows, penalty is a scalar");
  return make(op::token_log_prob{std::move(name)}, Rows{}, std::move(x), std::move(penalized), std::move(penalty),
              std::move(ids));
}

} // namespace halformer::dsl
