// GPU schedules of the float32 GEMM kernels (head_projection, out_projection,
// logits, FFN): weights in panels, each GEMM the block/thread/register tiling of
// gpu/gemm.hpp over panels (gpu/quantized.hpp: schedule_panel_gemm).
// The FFN's hidden layer (d_ff x rows) is computed at root in global memory by its
// own kernel; `hidden_*` knobs size that GEMM separately (its reduction is d_model
// long, the second one's d_ff).
#pragma once

#include "halformer/schedules/gpu/gemm.hpp"
#include "halformer/schedules/gpu/quantized.hpp"

namespace halformer::schedules::gpu {

inline void head_projection(const dsl::lowering& ctx, const std::vector<std::pair<std::string, Halide::Func>>& outs,
                            const knob_values& k) {
  for (const gemm_stage& g : head_projection_stages(ctx, outs))
    schedule_panel_gemm(ctx, g, k);
}

inline void out_projection(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  schedule_panel_gemm(ctx, out_projection_stage(ctx, out), k);
}

inline void logits(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  schedule_panel_gemm(ctx, logits_stage(ctx, out), k);
}

inline std::vector<knob_decl> ffn_knobs() { return ffn_knob_decls(gemm_knobs()); }

inline void ffn(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  hidden.out.compute_root();
  schedule_panel_gemm(ctx, hidden, hidden_knobs(k, gemm_knobs()));
  schedule_panel_gemm(ctx, proj, k);
}

} // namespace halformer::schedules::gpu
