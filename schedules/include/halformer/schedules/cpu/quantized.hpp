// CPU schedules of the int8 GEMM kernels (dsl::quantized_linear): the input's
// per-row quantization, then the GEMM of gemm.hpp on int32 accumulators.
//
// Register budget: an int32 accumulator vector has a float vector's lanes, so the
// GEMM's tiles are float's (AVX2: 3 x 4 = 12 accumulators; each step's int8
// weights are widened in the 3 weight registers and the broadcast input in the
// 16th). The products are exact in int16 and summed in int32 (dsl/lower.hpp).
#pragma once

#include "halformer/schedules/cpu/gemm.hpp"

namespace halformer::schedules::cpu {

// A quantized GEMM's int8 input (stage <name>_x) and its row steps (<name>_x_step),
// each computed at root before the GEMM reads them: the steps in tasks of
// `rows_per_task` rows with the row maximum tree-vectorised (max is exact in any
// order), then the int8 values, vectorised along the features. At d_model 512 a
// row takes well under a microsecond, against tens of microseconds of GEMM per
// row: tasks of 16 rows amortise the thread pool's dispatch (~1 us).
inline void quantized_input(const dsl::lowering& ctx, const std::string& name, const std::string& feature,
                            const Halide::Target& target, const bucket_scope& in) {
  using namespace Halide;
  constexpr int rows_per_task = 16;
  const int vec = target.natural_vector_size<float>();
  Func step = ctx.stage(name + "_x_step"), amax = ctx.stage(name + "_x_step_max"), values = ctx.stage(name + "_x");
  Var x(feature), t("t"), b("batch"), row("row"), rt("rt");
  step.compute_root();
  in(step).fuse(t, b, row).split(row, row, rt, rows_per_task, TailStrategy::GuardWithIf).parallel(row);
  amax.compute_at(step, rt);
  in.update(amax).atomic().vectorize(ctx.rdom(name + "_x_step").x, vec, TailStrategy::GuardWithIf);
  values.compute_root();
  in(values)
      .fuse(t, b, row)
      .split(row, row, rt, rows_per_task, TailStrategy::GuardWithIf)
      .parallel(row)
      .vectorize(x, vec, TailStrategy::GuardWithIf);
}

inline void quantized_logits(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target,
                             const knob_values& k, const bucket_scope& in) {
  quantized_input(ctx, "logits", "d_model", target, in);
  schedule_gemm(logits_stage(ctx, out), target, k, in);
}

} // namespace halformer::schedules::cpu
