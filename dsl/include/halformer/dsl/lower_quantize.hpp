// int8, bfloat16 and float16 lowering: part of dsl::lowering (lower.hpp includes this file).
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

// The name under which `l`'s Func is a stage, by identity (Halide may rename a
// Func whose name a previous pipeline used); empty if it is none.
inline std::string lowering::stage_name_of(const lowered& l) const {
  for (const auto& [n, s] : stages_)
    if (s.f.defined() && s.f.function().same_as(l.f.function()))
      return n;
  return {};
}

// An int8 stage's values as int16, a stage of their own, <name>_i16 (the int8
// GEMM schedules compute it at root): loaded as int16, a product with a widened
// int8 weight is one Halide cannot narrow back to int8 x int8, so it pairs them
// with the accumulator (vpdpwssd with avx512_zen4) rather than as pmaddwd and a
// separate add. Other operands (bfloat16 ones, weights) are returned as they are.
inline lowered lowering::int8_as_int16(const lowered& l) {
  const std::string stage = stage_name_of(l);
  if (stage.empty() || l.f.type() != Halide::Int(8))
    return l;
  const std::string name = stage + "_i16";
  if (auto s = stages_.find(name); s != stages_.end())
    return {s->second.f, l.dims};
  Halide::Func wide = new_stage(name);
  wide(vars(l)) = Halide::cast<int16_t>(call(l));
  return {wide, l.dims};
}

// An int8 stage's (or input's) values offset by 128 to unsigned bytes (the sign
// bit flipped), a stage of its own, <name>_u8 (inline unless a schedule stores
// it): the operand vpdpbusd takes unsigned. Shared by the GEMMs of one input.
inline lowered lowering::int8_as_uint8(const lowered& l) {
  const std::string stage = stage_name_of(l);
  const std::string name = (stage.empty() ? l.f.name() : stage) + "_u8";
  if (auto s = stages_.find(name); s != stages_.end())
    return {s->second.f, l.dims};
  Halide::Func offset = new_stage(name);
  offset(vars(l)) = Halide::reinterpret(Halide::UInt(8), call(l)) ^ Halide::cast<uint8_t>(0x80);
  return {offset, l.dims};
}

// Whether a contraction of an int8 input `x` sums byte quads: unsigned quads
// need the weight's sums (`w_sums`) for their correction.
inline bool lowering::int8_quads(const Halide::Type& x, const void* w_sums) const {
  return x == Halide::Int(8) && (int8_products == int8_form::signed_quads ||
                                 (int8_products == int8_form::unsigned_quads && w_sums != nullptr));
}
// The stage an int8 GEMM input is stored in, zero-padded, for this form of its
// products: <x>_u8_padded, <x>_padded (signed quads) or <x>_i16_padded.
inline std::string lowering::int8_padded_stage(const std::string& x) const {
  return x + (int8_products == int8_form::unsigned_quads ? "_u8_padded"
              : int8_products == int8_form::signed_quads ? "_padded"
                                                         : "_i16_padded");
}

// The input operand of byte quads: x + 128 as unsigned bytes (vpdpbusd's
// unsigned x signed), or x as it is (sdot's signed x signed).
inline lowered lowering::int8_quad_operand(const lowered& l) {
  return int8_products == int8_form::unsigned_quads ? int8_as_uint8(l) : l;
}
// Byte quads' sums start at -128 x the weight's sum for the unsigned form (the
// products' excess 128 x w), at 0 for the signed one.
inline Halide::Expr lowering::int8_quad_start(const Halide::Expr& w_sum) const {
  return int8_products == int8_form::unsigned_quads ? -128 * w_sum : Halide::Expr(0);
}

// Dot products of int8 or bfloat16 operands. int8 x int8 sums exactly in int32
// (which holds 2^31 / (255 x 127) = 66000 products: any reduction a model has),
// in one of two forms Halide's x86 backend turns into dot-product instructions
// when the schedule vectorises groups of the reduction:
// - pairs: int16 x int16 -> int32, pmaddwd (vpdpwssd with avx512_zen4);
// - unsigned quads (`int8_form::unsigned_quads`, given the weight's sums:
//   int8_contract): unsigned x
//   signed bytes, vpdpbusd (64 products per instruction with AVX-512, twice the
//   pairs' and no widening). The inputs are the unsigned operand: x + 128
//   (int8_as_uint8), in [1, 255], so every product fits vpdpbusd's int16
//   intermediates (255 x 127 = 32385) and its int32 sums (not the saturating
//   vpdpbusds) never reach 2^31; the accumulation starts at -128 x the weight's
//   sum for its output, which removes the products' excess 128 x w exactly: the
//   same integers as the pairs. The weights stay as they are stored, so the
//   loop reads them with no conversion, and the correction is a load per output
//   tile instead of a sum per input row.
// - signed quads (`int8_form::signed_quads`): signed x signed bytes, AArch64's
//   sdot (16 products per instruction: 4 lanes of 4), no correction;
// bfloat16 x bfloat16 is a float32 product (exact: 8 x 8 significant bits)
// summed in float32, the form it turns into vdpbf16ps. The innermost reduced
// dimension runs over whole blocks of `dot_product_block`, the operands reading
// zeros past its end: every dot-product width (pmaddwd's 8 lanes x 2, AVX-512's
// 16 x 2, vpdpbusd's 16 x 4) divides the block, so a schedule's reduction splits
// have no tail (a guarded tail kept the partial sums on the stack), and the
// zeros are confined to the last block (Halide splits the loop at the boundary).
inline void lowering::build_dot_product_contract(const op::contract& o, lowered& r, std::vector<lowered>& a) {
  const lowered* w_sums = o.third == op::contract_third::int8_weight_sums ? &a[2] : nullptr;
  if (const panel_input* w = panels_of(a[1])) {
    build_panel_contract(o, r, a[0], *w, nullptr, w_sums);
    return;
  }
  const std::vector<std::string> reduced = reduced_dims(r, a[0], a[1]);
  const std::string inner = reduced.at(0);
  const auto at = contraction_domain(o.name, r, a[0], a[1], dot_product_block);
  const bool quads = int8_quads(a[0].f.type(), w_sums);
  const Halide::Expr x = call(zeros_past(quads ? int8_quad_operand(a[0]) : int8_as_int16(a[0]), inner), at),
                     w = call(zeros_past(a[1], inner), at);
  if (x.type().is_bfloat()) {
    r.f(vars(r)) = 0.0f;
    r.f(vars(r)) += Halide::cast<float>(x) * Halide::cast<float>(w);
  } else if (quads) {
    r.f(vars(r)) = int8_quad_start(w_sums ? call(*w_sums) : Halide::Expr(0));
    r.f(vars(r)) += Halide::cast<int32_t>(Halide::widening_mul(x, w));
  } else {
    r.f(vars(r)) = 0;
    r.f(vars(r)) += Halide::widening_mul(Halide::cast<int16_t>(x), Halide::cast<int16_t>(w));
  }
}

template <class Args> void lowering::build(const op::to_bfloat16&, lowered& r, std::vector<lowered>& a, const Args&) {
  r.f(vars(r)) = Halide::cast(Halide::BFloat(16), call(a[0]));
}
// Clamped first: 65504 is float16's largest finite value, and values past it
// would round to infinity (vcvtps2ph rounds to nearest even).
template <class Args> void lowering::build(const op::to_float16&, lowered& r, std::vector<lowered>& a, const Args&) {
  r.f(vars(r)) = Halide::cast(Halide::Float(16), Halide::clamp(call(a[0]), -65504.0f, 65504.0f));
}

// Quantization (quantize.hpp): a row's step is max |x| / 127; its values are x
// times 1 / step (a multiply per element, not a divide; the float64 reference
// repeats these float32 operations), rounded half to even; a zero row (step 0)
// gives zeros. The three operations are strict_float: Halide's default float
// math may divide by a reciprocal or reassociate, and one ulp of a step moves
// values at a rounding boundary by a whole step (seen on SSE4.1 at 2e-3).

template <class Args> void lowering::build(const op::quant_step& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered& x = a[0];
  std::vector<std::string> features; // x's dimensions that r (the rows) lacks, innermost first
  for (const auto& d : x.dims)
    if (std::find(r.dims.begin(), r.dims.end(), d) == r.dims.end())
      features.push_back(d);
  const auto at = reduction_over(o.name, features);
  Halide::Func amax = new_stage(o.name + "_max");
  amax(vars(r)) = 0.0f;
  amax(vars(r)) = Halide::max(amax(vars(r)), Halide::abs(call(x, at)));
  r.f(vars(r)) = Halide::strict_float(amax(vars(r)) / 127.0f);
}
template <class Args> void lowering::build(const op::quantize& o, lowered& r, std::vector<lowered>& a, const Args&) {
  const lowered &x = a[0], &step = a[1];
  Halide::Func inverse = new_stage(o.name + "_inverse");
  inverse(vars(step)) = Halide::select(call(step) > 0.0f, Halide::strict_float(1.0f / call(step)), 0.0f);
  // Rounded half to even by adding and subtracting 1.5 x 2^23 (exact for |v| < 2^22;
  // |x| / step is at most 127 and a few ulps): two adds where Halide's round splits
  // an AVX-512 vector into two AVX roundps.
  const Halide::Expr v = Halide::strict_float(call(x) * inverse(vars(step)));
  const Halide::Expr q = Halide::strict_float((v + 12582912.0f) - 12582912.0f);
  r.f(vars(r)) = Halide::cast<int8_t>(Halide::clamp(q, -127.0f, 127.0f));
}
template <class Args> void lowering::build(const op::dequantize&, lowered& r, std::vector<lowered>& a, const Args&) {
  r.f(vars(r)) = Halide::cast<float>(call(a[0])) * call(a[1]) * call(a[2]);
}

} // namespace halformer::dsl
