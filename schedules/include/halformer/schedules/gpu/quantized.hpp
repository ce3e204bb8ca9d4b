// GPU schedules of the int8 GEMM kernels (dsl::quantized_linear): the input's row
// steps at root, one thread per row (a serial maximum over the features: d_model
// reads, against the GEMM's d_model x vocab multiply-adds); the int8 values are
// inlined into the GEMM's loads (one multiply and a rounding per use); the GEMM
// is gpu/gemm.hpp's on int32 accumulators. Correct, not yet fast: int8 weights
// lie in the dot-product layout (input feature innermost), so neighbouring
// threads along the outputs read a weight row apart (uncoalesced).
#pragma once

#include "halformer/schedules/gpu/gemm.hpp"

namespace halformer::schedules::gpu {

inline void quantized_input(const dsl::lowering& ctx, const std::string& name) {
  using namespace Halide;
  Func step = ctx.stage(name + "_step");
  Var t("t"), b("batch"), row("row"), rb("rb"), ri("ri");
  step.compute_root().fuse(t, b, row).gpu_tile(row, rb, ri, 64, TailStrategy::GuardWithIf);
  ctx.stage(name + "_step_max").compute_at(step, ri);
}

inline void quantized_logits(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  quantized_input(ctx, "logits_x");
  schedule_gemm(logits_stage(ctx, out), k);
}

inline void quantized_head_projection(const dsl::lowering& ctx,
                                      const std::vector<std::pair<std::string, Halide::Func>>& outs,
                                      const knob_values& k) {
  quantized_input(ctx, "x_quantized");
  for (const gemm_stage& g : dot_product_head_projection_stages(ctx, outs))
    schedule_gemm(g, k);
}

inline void quantized_out_projection(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  quantized_input(ctx, "proj_x");
  schedule_gemm(out_projection_stage(ctx, out), k);
}

// The activated hidden layer at root (gpu/projections.hpp: ffn), its row steps too.
inline void quantized_ffn(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  quantized_input(ctx, "hidden_x");
  // Bounded to d_ff: the second GEMM's zero-padded reduction (dsl/lower.hpp) reads
  // it through a clamp, which would leave the register tiles' extents unknown.
  hidden.out.compute_root().bound(hidden.o, 0, hidden.o_extent);
  schedule_gemm(hidden, hidden_knobs(k, gemm_knobs()));
  quantized_input(ctx, "proj_x");
  schedule_gemm(proj, k);
}

} // namespace halformer::schedules::gpu
