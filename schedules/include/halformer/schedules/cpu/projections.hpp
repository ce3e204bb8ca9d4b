// CPU schedules of the GEMM-shaped kernels: head_projection (q/k/v in head layout),
// out_projection (merge heads + bias + residual), logits. Each is one register-
// blocked GEMM (gemm.hpp); their knobs are gemm_knobs().
#pragma once

#include "halformer/schedules/cpu/gemm.hpp"

namespace halformer::schedules::cpu {

inline void head_projection(const dsl::lowering& ctx, const std::vector<std::pair<std::string, Halide::Func>>& outs,
                            const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  for (const gemm_stage& g : head_projection_stages(ctx, outs))
    schedule_gemm(g, target, k, in);
}

inline void out_projection(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target,
                           const knob_values& k, const bucket_scope& in) {
  schedule_gemm(out_projection_stage(ctx, out), target, k, in);
}

inline void logits(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in) {
  schedule_gemm(logits_stage(ctx, out), target, k, in);
}

} // namespace halformer::schedules::cpu
