// CPU schedules of the GEMM-shaped kernels: head_projection (q/k/v in head layout),
// out_projection (merge heads + bias + residual), logits. Each is one register-
// blocked GEMM (gemm.hpp); their knobs are gemm_knobs().
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/cpu/gemm.hpp"

namespace halformer::schedules::cpu {

// outs: the Output Funcs named by the stages "q", "k", "v" that they copy.
inline void head_projection(const dsl::lowering& ctx, const std::vector<std::pair<std::string, Halide::Func>>& outs,
                            const Halide::Target& target, const knob_values& k) {
  for (const auto& [stage, out] : outs) {
    gemm_stage g{out,
                 ctx.stage(stage),
                 ctx.var("d_k"),
                 ctx.var("t"),
                 {ctx.var("heads")},
                 ctx.var("batch"),
                 {ctx.rdom(stage).x},
                 ctx.extent("d_k"),
                 ctx.extent("t"),
                 ctx.extent("batch")};
    schedule_gemm(g, target, k);
  }
}

inline void out_projection(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target,
                           const knob_values& k) {
  const Halide::RDom r = ctx.rdom("proj"); // (d_k, heads)
  gemm_stage g{out,        ctx.stage("proj"),     ctx.var("d_model"), ctx.var("t"),       {}, ctx.var("batch"),
               {r.x, r.y}, ctx.extent("d_model"), ctx.extent("t"),    ctx.extent("batch")};
  schedule_gemm(g, target, k);
}

inline void logits(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k) {
  gemm_stage g{out,
               ctx.stage("logits"),
               ctx.var("vocab"),
               ctx.var("t"),
               {},
               ctx.var("batch"),
               {ctx.rdom("logits").x},
               ctx.extent("vocab"),
               ctx.extent("t"),
               ctx.extent("batch")};
  schedule_gemm(g, target, k);
}

} // namespace halformer::schedules::cpu
