// Row reductions in vector lanes, for the kernels whose rows are long or many
// (the int8 GEMMs' input quantization, beam_candidates).
#pragma once

#include <Halide.h>

namespace halformer::schedules::cpu {

// `f`'s update, a reduction over `r` (r.x innermost), in `vec` partial
// reductions, one per lane of a vector along r.x (rfactor), reduced across the
// lanes once at the end (the update's plain loop over `lane`); the caller puts
// the returned lanes' Func where f's rows are computed. Reduced across lanes at
// every vector instead (atomic().vectorize()), each vector ends in a horizontal
// step that the next one waits for (Zen 5, 2 threads, harness medians of 3
// interleaved rounds, beam_candidates at 32 rows of 32000 logits: 0.242 ->
// 0.196 ms). The lanes' storage is bound to one vector and the loop over vectors
// always partitioned, so the partial reductions stay in a register in every row
// task: in a task of fewer rows than a full one (every decode step of a batch
// under 16) the loop kept its guard inside and the partial reductions on the
// stack, a store-to-load chain per vector (perf, q_projection_int8 at batch 8:
// the row maximum took ~1.2 us of 8.3).
inline Halide::Func reduction_in_lanes(Halide::Func f, const Halide::RDom& r, int vec) {
  using namespace Halide;
  RVar fo("fo"), fi("fi");
  Var lane("lane");
  Func lanes = f.update().split(r.x, fo, fi, vec, TailStrategy::GuardWithIf).rfactor(fi, lane);
  lanes.bound(lane, 0, vec).vectorize(lane);
  lanes.update().vectorize(lane).always_partition(fo);
  return lanes;
}

} // namespace halformer::schedules::cpu
