// GPU schedules of the int8 GEMM kernels (dsl::quantized_linear): the input's row
// steps at root, one thread per row (a serial maximum over the features: d_model
// reads, against the GEMM's d_model x vocab multiply-adds); the int8 values are
// inlined into the GEMM's loads (one multiply and a rounding per use); the GEMM
// is over weights in panels (dsl/panels.hpp): gpu/gemm.hpp's output tiles, each
// thread summing its outputs' lanes of their panels (<name>_panels, and the
// int16 pairs before them) serially. Neighbouring threads along the outputs
// read neighbouring 4-byte groups of a panel (coalesced). Correct, not yet fast.
#pragma once

#include "halformer/schedules/gpu/gemm.hpp"

namespace halformer::schedules::gpu {

inline void schedule_panel_gemm(const dsl::lowering& ctx, gemm_stage g, const knob_values& k) {
  using namespace Halide;
  const Expr decode = g.t_extent == 1;
  tile_gemm_output(g, g.out.specialize(decode), g.batch, k);
  tile_gemm_output(g, g.out, g.t, k);
  const std::string name = ctx.stage_name(g.acc);
  ctx.stage(name + "_panels").compute_at(g.out, Var("ot"));
  const bool pairs = ctx.has_stage(name + "_pairs");
  if (pairs)
    ctx.stage(name + "_pairs").compute_at(g.out, Var("ot"));
  // The reduction over the weights' 64-byte groups (r[1]) unrolled k_unroll
  // times: more independent loads in flight per thread between its FMAs.
  const RDom r = ctx.rdom(name);
  RVar go("go"), gi("gi");
  ctx.stage(name + (pairs ? "_pairs" : "_panels"))
      .update()
      .split(r[1], go, gi, k["k_unroll"], TailStrategy::GuardWithIf)
      .unroll(gi);
}

inline void quantized_input(const dsl::lowering& ctx, const std::string& name) {
  using namespace Halide;
  Func step = ctx.stage(name + "_step");
  Var t("t"), b("batch"), row("row"), rb("rb"), ri("ri");
  step.compute_root().fuse(t, b, row).gpu_tile(row, rb, ri, 64, TailStrategy::GuardWithIf);
  ctx.stage(name + "_step_max").compute_at(step, ri);
}

inline void quantized_logits(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  quantized_input(ctx, "logits_x");
  schedule_panel_gemm(ctx, logits_stage(ctx, out), k);
}

inline void quantized_head_projection(const dsl::lowering& ctx,
                                      const std::vector<std::pair<std::string, Halide::Func>>& outs,
                                      const knob_values& k) {
  quantized_input(ctx, "x_quantized");
  for (const gemm_stage& g : head_projection_stages(ctx, outs))
    schedule_panel_gemm(ctx, g, k);
}

inline void quantized_out_projection(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  quantized_input(ctx, "proj_x");
  schedule_panel_gemm(ctx, out_projection_stage(ctx, out), k);
}

// The activated hidden layer at root (gpu/projections.hpp: ffn), its row steps too.
inline void quantized_ffn(const dsl::lowering& ctx, Halide::Func out, const knob_values& k) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  quantized_input(ctx, "hidden_x");
  // Bounded to d_ff: the second GEMM's zero-padded reduction (dsl/lower.hpp) reads
  // it through a clamp, which would leave the register tiles' extents unknown.
  hidden.out.compute_root().bound(hidden.o, 0, hidden.o_extent);
  schedule_panel_gemm(ctx, hidden, hidden_knobs(k, gemm_knobs()));
  quantized_input(ctx, "proj_x");
  schedule_panel_gemm(ctx, proj, k);
}

} // namespace halformer::schedules::gpu
