// int8 and bfloat16 lowering: part of dsl::lowering (lower.hpp includes this file).
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

// An int8 stage's values as int16, a stage of their own, <name>_i16 (the int8
// GEMM schedules compute it at root): loaded as int16, a product with a widened
// int8 weight is one Halide cannot narrow back to int8 x int8, so it pairs them
// with the accumulator (vpdpwssd with avx512_zen4) rather than as pmaddwd and a
// separate add. Other operands (bfloat16 ones, weights) are returned as they are.
inline lowered lowering::int8_as_int16(const lowered& l) {
  std::string stage; // by identity: Halide may rename a Func whose name a previous pipeline used
  for (const auto& [n, s] : stages_)
    if (s.f.defined() && s.f.function().same_as(l.f.function()))
      stage = n;
  if (stage.empty() || l.f.type() != Halide::Int(8))
    return l;
  const std::string name = stage + "_i16";
  if (auto s = stages_.find(name); s != stages_.end())
    return {s->second.f, l.dims};
  Halide::Func wide = new_stage(name);
  wide(vars(l)) = Halide::cast<int16_t>(call(l));
  return {wide, l.dims};
}

// Dot products of int8 or bfloat16 operands. int8 x int8 sums exactly in int32
// (which holds 2^31 / 127^2 = 133000 products: any reduction a model has),
// written as int16 x int16 -> int32, the form Halide's x86 backend turns into
// pmaddwd (vpdpwssd with avx512_zen4) when pairs are vectorised. bfloat16 x
// bfloat16 is a float32 product (exact: 8 x 8 significant bits) summed in
// float32, the form it turns into vdpbf16ps. The innermost reduced dimension
// runs over whole blocks of `dot_product_block`, the operands reading zeros past
// its end: every dot-product width (pmaddwd's 8 lanes x 2, AVX-512's 16 x 2,
// vpdpbusd's 16 x 4) divides the block, so a schedule's reduction splits have no
// tail (a guarded tail kept the partial sums on the stack), and the zeros are
// confined to the last block (Halide splits the loop at the boundary).
inline void lowering::build_dot_product_contract(const op::contract& o, lowered& r, std::vector<lowered>& a) {
  const std::string inner = reduced_dims(r, a[0], a[1]).at(0);
  const auto at = contraction_domain(o.name, r, a[0], a[1], dot_product_block);
  const auto zero_padded = [&](const lowered& l) {
    Halide::Region bounds;
    for (const auto& d : l.dims)
      bounds.push_back(d == inner ? Halide::Range(0, extent(d)) : Halide::Range());
    return lowered{Halide::BoundaryConditions::constant_exterior(l.f, Halide::cast(l.f.type(), 0), bounds), l.dims};
  };
  const Halide::Expr x = call(zero_padded(int8_as_int16(a[0])), at), w = call(zero_padded(a[1]), at);
  if (x.type().is_bfloat()) {
    r.f(vars(r)) = 0.0f;
    r.f(vars(r)) += Halide::cast<float>(x) * Halide::cast<float>(w);
  } else {
    r.f(vars(r)) = 0;
    r.f(vars(r)) += Halide::widening_mul(Halide::cast<int16_t>(x), Halide::cast<int16_t>(w));
  }
}

template <class Args> void lowering::build(const op::to_bfloat16&, lowered& r, std::vector<lowered>& a, const Args&) {
  r.f(vars(r)) = Halide::cast(Halide::BFloat(16), call(a[0]));
}

// Quantization (quantize.hpp): a row's step is max |x| / 127; its values are x
// times 1 / step (a multiply per element, not a divide; the float64 reference
// repeats these float32 operations), rounded half to even; a zero row (step 0)
// gives zeros. The three operations are strict_float: Halide's default float
// math may divide by a reciprocal or reassociate, and one ulp of a step moves
// values at a rounding boundary by a whole step (seen on SSE4.1 at 2e-3).

template <class Args> void lowering::build(const op::quant_step& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  Halide::Region features; // x's dimensions that r (the rows) lacks, innermost first
  std::map<std::string, Halide::Expr> at;
  for (const auto& d : x.dims)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end())
      features.emplace_back(0, extent(d));
  Halide::RDom rd(features, o.name + "_r");
  for (const auto& d : x.dims)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end())
      at[d] = rd[int(at.size())];
  Halide::Func amax = new_stage(o.name + "_max");
  amax(vars(r)) = 0.0f;
  amax(vars(r)) = Halide::max(amax(vars(r)), Halide::abs(call(x, at)));
  r.f(vars(r)) = Halide::strict_float(amax(vars(r)) / 127.0f);
  rdoms_[o.name] = rd;
}
template <class Args> void lowering::build(const op::quantize& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered &x = a[0], &step = a[1];
  Halide::Func inverse = new_stage(o.name + "_inverse");
  inverse(vars(step)) = Halide::select(call(step) > 0.0f, Halide::strict_float(1.0f / call(step)), 0.0f);
  const Halide::Expr q = Halide::round(Halide::strict_float(call(x) * inverse(vars(step))));
  r.f(vars(r)) = Halide::cast<int8_t>(Halide::clamp(q, -127.0f, 127.0f));
}
template <class Args> void lowering::build(const op::dequantize&, lowered& r, std::vector<lowered>& a, const Args&) {
  r.f(vars(r)) = Halide::cast<float>(call(a[0])) * call(a[1]) * call(a[2]);
}

} // namespace halformer::dsl
