// Lowering of the row operations (lower.hpp's lowering::build): masked softmax,
// LayerNorm, the embedding gather, sinusoidal positions, and the decode step's
// row reductions (argmax, the log-sum-exp of a row, chunk maxima).
#pragma once

#include "halformer/dsl/lower.hpp"

#include <limits>

namespace halformer::dsl {

template <class Args> void lowering::build(const op::softmax& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  const std::string &k = r.dims[0], &q = r.dims[1], &b = r.dims[2];
  Halide::Var vk = var(k), vq = var(q), vb = var(b);
  Halide::Expr ok = valid(vk, vq, a[1].f(vb), Halide::cast<int>(scalar_of(a[2])), scalar_of(a[3]));
  Halide::Func masked = new_stage(o.name + "_masked"), row_max = new_stage(o.name + "_max"),
               e = new_stage(o.name + "_exp"), row_sum = new_stage(o.name + "_sum");
  masked(vk, vq, vb) = Halide::select(ok, call(x), masked_logit);
  Halide::RDom rk(0, extent(k), o.name + "_rk");
  row_max(vq, vb) = masked_logit;
  row_max(vq, vb) = Halide::max(row_max(vq, vb), masked(rk, vq, vb));
  e(vk, vq, vb) = Halide::select(ok, Halide::exp(masked(vk, vq, vb) - row_max(vq, vb)), 0.0f);
  row_sum(vq, vb) = 0.0f;
  row_sum(vq, vb) += e(rk, vq, vb);
  if (o.log)
    r.f(vk, vq, vb) = Halide::select(ok, masked(vk, vq, vb) - row_max(vq, vb) - Halide::log(row_sum(vq, vb)),
                                     std::numeric_limits<float>::lowest());
  else
    r.f(vk, vq, vb) = Halide::select(row_sum(vq, vb) > 0.0f, e(vk, vq, vb) / row_sum(vq, vb), 0.0f);
  rdoms_[o.name] = rk;
}

template <class Args> void lowering::build(const op::layernorm& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  const std::string& d = r.dims[0];
  std::vector<Halide::Var> rows;
  for (std::size_t i = 1; i < r.dims.size(); ++i)
    rows.push_back(var(r.dims[i]));
  Halide::RDom rd(0, extent(d), o.name + "_rd");
  Halide::Func sum = new_stage(o.name + "_sum"), mean = new_stage(o.name + "_mean"), sq = new_stage(o.name + "_sqdev"),
               rstd = new_stage(o.name + "_rstd");
  Halide::Expr n = Halide::cast<float>(extent(d));
  std::map<std::string, Halide::Expr> at_r{{d, rd.x}};
  // Sums of x - x(0): a large common offset (a residual stream's mean) then costs
  // no precision, since rounding errors scale with the deviations, not the mean.
  Halide::Func shift = new_stage(o.name + "_shift");
  std::map<std::string, Halide::Expr> at_0{{d, 0}};
  shift(rows) = call(x, at_0);
  sum(rows) = 0.0f;
  sum(rows) += call(x, at_r) - shift(rows);
  mean(rows) = shift(rows) + sum(rows) / n;
  // Two passes (mean, then squared deviations): no cancellation in the variance.
  sq(rows) = 0.0f;
  sq(rows) += Halide::pow(call(x, at_r) - mean(rows), 2);
  rstd(rows) = 1.0f / Halide::sqrt(sq(rows) / n + scalar_of(a[3]));
  r.f(vars(r)) = (call(x) - mean(rows)) * rstd(rows) * call(a[1]) + call(a[2]);
  rdoms_[o.name] = rd;
}

template <class Args> void lowering::build(const op::gather& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered &table = a[0], &ids = a[1];
  Halide::Expr vocab = extent(table.dims[1]);
  Halide::Func checked = new_stage(o.name + "_ids");
  Halide::Expr id = call(ids);
  checked(vars(ids)) = Halide::require(id >= 0 && id < vocab, id, "token id", id, "at position", var(ids.dims[0]),
                                       "of batch row", var(ids.dims[1]), "is outside the vocabulary [0,", vocab, ")");
  const Halide::Expr row = Halide::clamp(checked(vars(ids)), 0, vocab - 1);
  const Halide::Expr value = table.f(var(r.dims[0]), row);
  // An int8 table (quantize.hpp): its value times the row's step.
  r.f(vars(r)) = a.size() == 3 ? Halide::cast<float>(value) * a[2].f(row) : value;
}

// Stages <name>_freq (per pair i: exp(-i * step), the paper's 10000^(-2i/d)), <name>_sin and <name>_cos (per
// pair and position), then the layout's selection of them: a schedule that
// computes the three ahead evaluates each function once per pair, not both per
// feature. Halide's sin and cos are a scalar libm call per lane on x86 (6.9 ms
// for 2048 x 512 positions on a Zen 3); fast_sin and fast_cos vectorise, within
// 1e-5 after reducing the angle by pi/2 in float32.
template <class Args> void lowering::build(const op::sinusoidal& o, lowered& r, std::vector<lowered>& a, const Args&) {
  Halide::Var d = var(r.dims[0]), t = var(r.dims[1]), i("pair");
  const Halide::Expr width = extent(r.dims[0]), split = scalar_of(a[1]);
  const Halide::Expr sines = (width + 1) / 2; // the split layout's first cosine
  Halide::Func freq = new_stage(o.name + "_freq"), sin_f = new_stage(o.name + "_sin"),
               cos_f = new_stage(o.name + "_cos");
  freq(i) = Halide::exp(Halide::cast<float>(i) * -scalar_of(a[2]));
  const Halide::Expr angle = Halide::cast<float>(t + scalar_of(a[0])) * freq(i);
  sin_f(i, t) = Halide::fast_sin(angle);
  cos_f(i, t) = Halide::fast_cos(angle);
  // Feature d's pair i (its angle is pos / 10000^(2i/d)) and function. The clamp
  // changes no value (every layout's pairs lie in [0, sines)); it bounds the
  // select over both layouts, which bounds inference would otherwise size at
  // [-sines, width): three times the pairs a position needs.
  const Halide::Expr pair =
      Halide::clamp(Halide::select(split, Halide::select(d < sines, d, d - sines), d / 2), 0, sines - 1);
  const Halide::Expr is_sine = Halide::select(split, d < sines, d % 2 == 0);
  r.f(d, t) = Halide::select(is_sine, sin_f(pair, t), cos_f(pair, t));
}

// Two order-free reductions, so schedules may vectorise both: the row's maximum
// (max is exact in any order), then the lowest index holding it (min of
// indices, exact). A row whose maximum equals no entry (a NaN) gives its last
// index: always a valid id.
template <class Args> void lowering::build(const op::argmax& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  const Halide::Expr n = extent(x.dims[0]);
  Halide::RDom rd(0, n, o.name + "_r");
  Halide::Func row_max = new_stage(o.name + "_max"), first = new_stage(o.name + "_first");
  const Halide::Expr v = call(x, {{x.dims[0], rd.x}});
  row_max(vars(r)) = call(x, {{x.dims[0], 0}});
  row_max(vars(r)) = Halide::max(row_max(vars(r)), v);
  first(vars(r)) = n - 1;
  first(vars(r)) = Halide::min(first(vars(r)), Halide::select(v == row_max(vars(r)), rd.x, n - 1));
  r.f(vars(r)) = first(vars(r));
  rdoms_[o.name] = rd;
}
template <class Args>
void lowering::build(const op::max_log_prob& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  Halide::RDom rd(0, extent(x.dims[0]), o.name + "_r");
  Halide::Func row_max = new_stage(o.name + "_max"), row_sum = new_stage(o.name + "_sum");
  std::map<std::string, Halide::Expr> at{{x.dims[0], rd.x}};
  row_max(vars(r)) = call(x, {{x.dims[0], 0}});
  row_max(vars(r)) = Halide::max(row_max(vars(r)), call(x, at));
  row_sum(vars(r)) = 0.0f;
  row_sum(vars(r)) += Halide::exp(call(x, at) - row_max(vars(r)));
  r.f(vars(r)) = -Halide::log(row_sum(vars(r)));
  rdoms_[o.name] = rd;
}

// Each chunk's maximum: a reduction over the chunk's entries (the last chunk's
// missing ones read the row's last entry, which cannot change its maximum).
template <class Args> void lowering::build(const op::chunk_max& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  Halide::RDom rd(0, o.size, o.name + "_r");
  Halide::Func best = new_stage(o.name + "_best");
  const Halide::Expr first = var(r.dims[0]) * o.size, last = extent(x.dims[0]) - 1;
  extents_[r.dims[0]] = (last + o.size) / o.size; // the chunks: an output of another extent is an error
  best(vars(r)) = call(x, {{x.dims[0], Halide::min(first, last)}});
  best(vars(r)) = Halide::max(best(vars(r)), call(x, {{x.dims[0], Halide::min(Halide::likely(first + rd.x), last)}}));
  r.f(vars(r)) = best(vars(r));
  rdoms_[o.name] = rd;
}

} // namespace halformer::dsl
