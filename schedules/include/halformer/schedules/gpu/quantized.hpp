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
  Func step = ctx.stage(name + "_x_step");
  Var t("t"), b("batch"), row("row"), rb("rb"), ri("ri");
  step.compute_root().fuse(t, b, row).gpu_tile(row, rb, ri, 64, TailStrategy::GuardWithIf);
  ctx.stage(name + "_x_step_max").compute_at(step, ri);
}

inline void quantized_logits(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  quantized_input(ctx, "logits");
  schedule_gemm(logits_stage(ctx, out), k);
}

} // namespace halformer::schedules::gpu
