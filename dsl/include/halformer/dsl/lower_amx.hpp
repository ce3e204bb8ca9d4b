// The AMX form of a contraction against a weight in panels (lower_panels.hpp),
// beside its vector form, for targets with Intel's tile unit (the generator
// sets lowering::amx_tiles from Halide's avx512_sapphirerapids feature). Halide
// 21 turns it into tile loads, tdpbusd / tdpbf16ps and tile stores
// (src/ExtractTileOperations.cpp) only in one shape, which fixes this
// algorithm (what it rejects: bench/results/intel-xeon-f6m167-avx512/amx-forms.md):
// - sums from zero (int8: the unsigned quads' -128 x weight sum is added after
//   them), cast(x) x cast(w) over a one-dimensional reduction of the inputs;
// - the weights read through a three-dimensional buffer with the panel's
//   offset inside its group coordinate: the stored weight has the panel as a
//   dimension of its own, so a copy of each panel (<name>_amx_weights) is read,
//   which the schedule makes once per panel and block of rows;
// - the input a stored stage (int8: the unsigned bytes, <x>_u8_padded; bfloat16:
//   the rounded input), read without padding: the form is taken only where the
//   inputs are whole 64-byte tile steps.
// The consumer takes the AMX sums where amx_condition(name) holds (prefill of
// at least 64 rows: 16-row tiles) and the vector sums elsewhere; each schedule
// branch computes only the form it reads (Halide skips a producer a select
// does not read).
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

inline Halide::Expr lowering::amx_condition(const std::string& name) const {
  auto c = amx_conditions_.find(name);
  return c == amx_conditions_.end() ? Halide::Expr() : c->second;
}

// Whether a contraction against `w` summing byte `quads` or `bf16` pairs has an
// AMX form: the target has the tiles, int8 sums unsigned quads, the weight has
// one input dim (FFN, logits, the head projections; not the out projection,
// whose input is (d_k, heads): the tile's reduction is one-dimensional).
inline bool lowering::takes_amx_form(const panel_input& w, bool quads, bool bf16) const {
  return amx_tiles && w.inputs == 1 && (bf16 || (quads && int8_products == int8_form::unsigned_quads));
}

// The AMX sums of contraction `name` at (lane, panel, rows...): `x` the stored
// input (its first dim the contraction's), `w` the weight; registers stages
// <name>_amx (the sums, RDom <name>_amx) and <name>_amx_weights (the panel copy),
// and the condition the consumer takes them under.
inline Halide::Func lowering::amx_sums(const std::string& name, const lowered& x, const panel_input& w,
                                       const std::vector<std::string>& rows, const Halide::Expr& stored_panels) {
  using Halide::Expr, Halide::Var;
  const bool bf16 = x.f.type().is_bfloat();
  const Halide::Type acc = bf16 ? Halide::Float(32) : Halide::Int(32);
  const std::string& in0 = w.dims[0];
  const int step = panels::amx_step_bytes / x.f.type().bytes(); // inputs per tile step
  const Var m("m"), lane("lane"), group("group"), panel("panel");
  std::vector<Var> stored{m, lane, group, panel};
  std::vector<Expr> from{m, lane, group, Halide::min(panel, stored_panels - 1)};
  for (std::size_t d = std::size_t(w.inputs) + 1; d < w.dims.size(); ++d)
    stored.push_back(var(w.dims[d])), from.push_back(var(w.dims[d]));
  Halide::Func weights = new_stage(name + "_amx_weights");
  weights(stored) = w.stored(from);
  const Halide::RDom k(0, extent(in0) / step * step, name + "_amx_r"); // whole steps: the split needs no tail
  rdoms_[name + "_amx"] = k;
  std::vector<Expr> at_w{k % w.group, lane, k / w.group, panel};
  for (std::size_t d = std::size_t(w.inputs) + 1; d < w.dims.size(); ++d)
    at_w.push_back(var(w.dims[d]));
  std::vector<Expr> at{lane, panel};
  for (const auto& d : rows)
    at.push_back(var(d));
  Halide::Func sums = new_stage(name + "_amx");
  sums(at) = Halide::cast(acc, 0);
  sums(at) += Halide::cast(acc, call(x, {{in0, k}})) * Halide::cast(acc, weights(at_w));
  amx_conditions_[name] = extent("t") >= panels::amx_min_rows && extent(in0) % step == 0;
  return sums;
}

} // namespace halformer::dsl
