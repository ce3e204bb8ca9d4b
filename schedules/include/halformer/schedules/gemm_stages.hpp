// The GEMM-shaped stages of the kernels (projections, FFN, logits), described once
// for every schedule: which Func holds the reduction, which dims are the output
// feature, the rows and the batch. cpu/panels.hpp, cpu/quantized.hpp and
// gpu/gemm.hpp schedule them. This file's code is part of every GEMM schedule's
// revision (schedules/CMakeLists.txt): any change to it retires their tuned
// records on every machine.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/knobs.hpp"

#include <string>
#include <utility>
#include <vector>

namespace halformer::schedules {

struct gemm_stage {
  Halide::Func out;             // pure; the consumer of the accumulator
  Halide::Func acc;             // pure init + one update: the reduction
  Halide::Var o;                // output feature (innermost)
  Halide::Var t;                // token rows
  std::vector<Halide::Var> mid; // dims between t and batch (e.g. heads)
  Halide::Var batch;            // outermost
  std::vector<Halide::RVar> r;  // reduction, innermost first
  Halide::Expr o_extent, t_extent, batch_extent;
  Halide::Expr mid_extent = 1; // the product of mid's extents
  Halide::Parameter weights;   // the weight input, where a schedule prefetches it
  Halide::Expr block;          // defined: t in serial blocks of this many rows, the loop "row_block" outermost
};

// q/k/v in head layout; outs: the Output Funcs of the stages "q", "k", "v". A
// float32 linear's stage is its sums (<which>_proj); quantized_linear's and
// bf16_linear's top stage is <name>_biased, their sums <name>.
inline std::vector<gemm_stage> head_projection_stages(const dsl::lowering& ctx,
                                                      const std::vector<std::pair<std::string, Halide::Func>>& outs) {
  const std::string biased = "_biased";
  std::vector<gemm_stage> gs;
  for (const auto& [top, out] : outs) {
    const std::string stage = top.ends_with(biased) ? top.substr(0, top.size() - biased.size()) : top;
    gs.push_back({out,
                  ctx.stage(stage),
                  ctx.var("d_k"),
                  ctx.var("t"),
                  {ctx.var("heads")},
                  ctx.var("batch"),
                  {ctx.rdom(stage).x},
                  ctx.extent("d_k"),
                  ctx.extent("t"),
                  ctx.extent("batch"),
                  ctx.extent("heads")});
  }
  return gs;
}

// Merge heads + bias + residual: the reduction runs over (d_k, heads).
inline gemm_stage out_projection_stage(const dsl::lowering& ctx, Halide::Func out) {
  const Halide::RDom r = ctx.rdom("proj");
  gemm_stage g{out,        ctx.stage("proj"),     ctx.var("d_model"), ctx.var("t"),       {}, ctx.var("batch"),
               {r.x, r.y}, ctx.extent("d_model"), ctx.extent("t"),    ctx.extent("batch")};
  g.weights = ctx.input_parameter("w");
  return g;
}

// A GEMM whose output is one feature dim `o` over (t, batch), reducing the
// stage `acc`'s one-dim domain against the weight input `weights`.
inline gemm_stage plain_gemm_stage(const dsl::lowering& ctx, Halide::Func out, const std::string& acc,
                                   const std::string& o, const std::string& weights) {
  gemm_stage g{
      out,           ctx.stage(acc),  ctx.var(o),         ctx.var("t"), {}, ctx.var("batch"), {ctx.rdom(acc).x},
      ctx.extent(o), ctx.extent("t"), ctx.extent("batch")};
  g.weights = ctx.input_parameter(weights);
  return g;
}

inline gemm_stage logits_stage(const dsl::lowering& ctx, Halide::Func out) {
  return plain_gemm_stage(ctx, out, "logits", "vocab", "w");
}

// The FFN's two GEMMs: the activated hidden layer, then the output projection.
inline std::pair<gemm_stage, gemm_stage> ffn_stages(const dsl::lowering& ctx, Halide::Func out) {
  return {plain_gemm_stage(ctx, ctx.stage("hidden_act"), "hidden", "d_ff", "w1"),
          plain_gemm_stage(ctx, out, "proj", "d_model", "w2")};
}

// The FFN's knobs: a GEMM schedule's knobs for the second GEMM, the same again
// prefixed "hidden_" for the first; hidden_knobs() selects the first GEMM's values.
inline std::vector<knob_decl> ffn_knob_decls(const std::vector<knob_decl>& gemm) {
  auto k = gemm;
  for (auto d : gemm) {
    d.name = "hidden_" + d.name;
    d.meaning = "first GEMM: " + d.meaning;
    k.push_back(d);
  }
  return k;
}
inline knob_values hidden_knobs(const knob_values& k, const std::vector<knob_decl>& gemm) {
  std::map<std::string, int> values;
  for (const auto& d : gemm)
    values[d.name] = k["hidden_" + d.name];
  return knob_values("ffn.hidden", gemm, values);
}

} // namespace halformer::schedules
