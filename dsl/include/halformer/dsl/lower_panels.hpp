// Contractions against weights in panels (dsl/panels.hpp): float32, bfloat16 or int8.
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

// `l` read past the end of `dim` as zeros: the last group's padding. A stage of
// its own, <name>_padded, shared by the GEMMs of one input (q, k and v), so that
// a schedule can store the padding once (the GEMMs then read it as they read
// any stage, with no bounds test in their loops; inlined, the test split off a
// last reduction step per tile whose loads were gathers). Padded along another
// dim than its first, <name>_padded_<dim>, so that each padding is its own
// stage. `l` no stage (an input): the boundary wrapper alone.
inline lowered lowering::zero_padded(const lowered& l, const std::string& dim) {
  const std::string stage = stage_name_of(l);
  if (stage.empty())
    return zeros_past(l, dim);
  const std::string name = stage + "_padded" + (dim == l.dims.at(0) ? "" : "_" + dim);
  if (auto s = stages_.find(name); s != stages_.end())
    return {s->second.f, l.dims};
  Halide::Func padded = new_stage(name);
  padded(vars(l)) = zeros_past(l, dim).f(vars(l));
  return {padded, l.dims};
}

// A value per output (the bias; int8 weights' sums) at each lane's output
// (out0 = 16 x panel + lane), zero in the last panel's padding: the sums' start.
inline Halide::Expr lowering::at_panel_lanes(const lowered& per_output, const std::string& out0,
                                             const Halide::Var& panel, const Halide::Var& lane) {
  return call(zeros_past(per_output, out0), {{out0, panels::lanes * panel + lane}});
}

// A contraction against a weight in panels (panels.hpp): stage <name>_panels
// (lane, panel, the result's other dims) holds the sums of each panel's 16
// outputs, <name> reads them back by output (o % 16, o / 16). A float32 bias is
// the sums' start, as linear's (so an output's additions run in one order in
// every branch of a schedule: added after the sums, it met the residual add,
// whose association Halide's simplifier may choose per branch, and a row's bits
// then depended on its batch). Outputs past the bias's end start at 0. Its reduction (<name>'s rdom) runs over (group
// member, group, the other input dims):
// - float32 (groups of one input): float32 products summed in order, one input
//   per step broadcast against the panel's 16 weights;
// - bfloat16 (groups of two inputs): each pair's two products (exact in
//   float32) summed into the lane's float32 sum (vdpbf16ps), one input pair
//   per step broadcast against the panel's 16 weight pairs;
// - int8 unsigned quads (given the weight's sums `w_sums`): the input's
//   bytes offset to unsigned (x + 128, stage <x>_u8_padded) times the weight's,
//   4 per lane (vpdpbusd), from -128 x the lane's weight sum, as
//   build_dot_product_contract's quads; signed quads (sdot): the input's bytes
//   as they are (stage <x>_padded), from 0;
// - int8 pairs: int16 products summed in pairs (pmaddwd) into stage
//   <name>_pairs (pair, lane, panel, ...), whose two pairs are added once at
//   the end: the panel's lanes never cross.
// bfloat16 and int8 inputs past the first input dim's end read zeros (the last
// group's padding).
// int8 pairs: the products summed in pairs at <name>_pairs, the two pairs added.
inline Halide::Expr lowering::pair_sums(const std::string& name, const Halide::Var& pair,
                                        const std::vector<Halide::Expr>& lanes, const Halide::Expr& xv,
                                        const Halide::Expr& wv) {
  Halide::Func pairs = new_stage(name + "_pairs");
  std::vector<Halide::Expr> paired{pair};
  paired.insert(paired.end(), lanes.begin(), lanes.end());
  pairs(paired) = 0;
  pairs(paired) += Halide::widening_mul(Halide::cast<int16_t>(wv), Halide::cast<int16_t>(xv));
  std::vector<Halide::Expr> first = paired, second = paired;
  first[0] = 0, second[0] = 1;
  return pairs(first) + pairs(second);
}

inline void lowering::build_panel_contract(const op::contract& o, lowered& r, const lowered& x, const panel_input& w,
                                           const lowered* bias, const lowered* w_sums) {
  using Halide::Expr;
  const std::vector<std::string> inputs(w.dims.begin(), w.dims.begin() + w.inputs);
  if (reduced_dims(r, x, {{}, w.dims}) != inputs)
    throw std::logic_error(o.name + ": a weight in panels must lead with the input dims, in the input's order");
  const std::string& out0 = w.dims[std::size_t(w.inputs)];
  std::vector<std::string> rest; // the result's dims but the panel's output dim
  for (const auto& d : r.dims)
    if (d != out0)
      rest.push_back(d);
  const bool floats = w.group == 1, bf16 = w.group == panels::group_inputs(2),
             quads = !floats && !bf16 && int8_quads(x.f.type(), w_sums);
  if (bias && !floats)
    throw std::logic_error(o.name + ": a bfloat16 or int8 contraction takes its bias after its sums (bf16_linear, "
                                    "quantized_linear)");
  const bool whole_groups = floats || bf16 || quads; // a step of the reduction is one group
  const int members = whole_groups ? w.group : 2;
  Halide::Region ranges{{0, members}, {0, (extent(inputs[0]) + w.group - 1) / w.group}};
  for (std::size_t i = 1; i < inputs.size(); ++i)
    ranges.emplace_back(0, extent(inputs[i]));
  const Halide::RDom rd(ranges, o.name + "_r");
  rdoms_[o.name] = rd;
  const Halide::Var lane("lane"), panel("panel"), pair("pair");
  // The stored weight and the input at the reduction's position (and pair).
  const Expr member = whole_groups ? Expr(rd[0]) : 2 * pair + rd[0];
  std::vector<Expr> at_w{member, lane, rd[1]}, rows;
  std::map<std::string, Expr> at_x{{inputs[0], w.group * rd[1] + member}};
  for (std::size_t i = 1; i < inputs.size(); ++i)
    at_w.push_back(rd[int(i) + 1]), at_x[inputs[i]] = rd[int(i) + 1];
  // Clamped to the stored panels: a tile's sums are computed for whole tiles
  // (schedules/cpu/panels.hpp rounds them up), which stay inside the padding;
  // the clamp tells bounds inference so, whose interval arithmetic cannot.
  const Expr stored_panels = panels::stored_extent(std::size_t(w.inputs), extent(out0), w.inputs, w.group);
  at_w.push_back(Halide::min(panel, stored_panels - 1));
  for (std::size_t d = std::size_t(w.inputs) + 1; d < w.dims.size(); ++d)
    at_w.push_back(var(w.dims[d]));
  for (const auto& d : rest)
    rows.push_back(var(d));
  const lowered source = quads ? int8_quad_operand(x) : whole_groups ? x : int8_as_int16(x);
  const lowered padded = floats ? source : zero_padded(source, inputs[0]);
  const Expr xv = call(padded, at_x), wv = w.stored(at_w);
  std::vector<Expr> lanes{lane, panel};
  lanes.insert(lanes.end(), rows.begin(), rows.end());
  Halide::Func sums = new_stage(o.name + "_panels");
  if (floats) {
    sums(lanes) = bias ? at_panel_lanes(*bias, out0, panel, lane) : Expr(0.0f);
    sums(lanes) += xv * wv;
  } else if (bf16) {
    sums(lanes) = 0.0f;
    sums(lanes) += Halide::cast<float>(xv) * Halide::cast<float>(wv);
  } else if (quads) {
    sums(lanes) = int8_quad_start(w_sums ? at_panel_lanes(*w_sums, out0, panel, lane) : Halide::Expr(0));
    sums(lanes) += Halide::cast<int32_t>(Halide::widening_mul(xv, wv));
  } else {
    sums(lanes) = pair_sums(o.name, pair, lanes, xv, wv);
  }
  std::vector<Expr> from{var(out0) % panels::lanes, var(out0) / panels::lanes};
  from.insert(from.end(), rows.begin(), rows.end());
  Expr value = sums(from);
  if (takes_amx_form(w, quads, bf16)) { // lower_amx.hpp: the tiles' sums where its condition holds
    const Halide::Func amx = amx_sums(o.name, quads ? padded : source, w, rest, stored_panels);
    value =
        Halide::select(amx_condition(o.name), quads ? amx(from) + int8_quad_start(call(*w_sums)) : amx(from), value);
  }
  r.f(vars(r)) = value;
}

} // namespace halformer::dsl
