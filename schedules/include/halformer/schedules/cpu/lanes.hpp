// Rows in parallel tasks, and row reductions in vector lanes: the row kernels
// (layernorm, softmax, the embedding), the int8 GEMMs' input quantization,
// greedy_pick and beam_candidates.
#pragma once

#include <Halide.h>

namespace halformer::schedules::cpu {

// The loop over a row task's rows (in_row_tasks): where the stages a row needs
// are computed.
inline Halide::Var row_in_task() { return Halide::Var("rt"); }

// The host's cores, from Halide's runtime when a loop starts (halformer's
// thread pool reads them once): a positive divisor whatever the runtime returns.
inline Halide::Expr host_cores() {
  using namespace Halide;
  return clamp(Internal::Call::make(Int(32), "halide_host_cpu_count", {}, Internal::Call::PureExtern), 1, 256);
}

// `s`'s rows (t, batch) fused and split into parallel tasks of `rows` rows, the
// rows of a task in row_in_task(). A task of fewer rows (the last, or every
// task of a call with fewer rows) runs the guarded copy of the loops inside.
inline Halide::Stage in_row_tasks(Halide::Stage s, int rows) {
  using namespace Halide;
  Var t("t"), b("batch"), row("row");
  return s.fuse(t, b, row).split(row, row, row_in_task(), rows, TailStrategy::GuardWithIf).parallel(row);
}

// `f`'s update, a reduction over `r` (r.x innermost), in `vectors` x `vec`
// partial reductions, one per lane of `vectors` vectors along r.x (rfactor),
// reduced across the lanes once at the end (the update's plain loop over
// `lane`); the caller puts the returned lanes' Func where f's rows are computed.
// Long rows take four vectors: four independent chains cover the add's latency,
// and a float sum of 32000 terms (greedy_pick's log-sum-exp) adds 2000 per lane
// with SSE4.1 instead of 8000, whose error reached 1.1e-5 of the result (the
// tests allow 1e-5). Rows of a few hundred take one: the lanes' final loop is
// scalar (Zen 5, q_projection_int8 at batch 8, four vectors: 10.2 -> 11.1 us). Reduced across lanes at
// every vector instead (atomic().vectorize()), each vector ends in a horizontal
// step that the next one waits for (Zen 5, 2 threads, harness medians of 3
// interleaved rounds, beam_candidates at 32 rows of 32000 logits: 0.242 ->
// 0.196 ms). The lanes' storage is bound to one vector and the loop over vectors
// always partitioned, so the partial reductions stay in a register in every row
// task: in a task of fewer rows than a full one (every decode step of a batch
// under 16) the loop kept its guard inside and the partial reductions on the
// stack, a store-to-load chain per vector (perf, q_projection_int8 at batch 8:
// the row maximum took ~1.2 us of 8.3).
inline Halide::Func reduction_in_lanes(Halide::Func f, const Halide::RDom& r, int vec, int vectors) {
  using namespace Halide;
  RVar fo("fo"), fi("fi");
  Var lane("lane"), lo("lo"), li("li");
  Func lanes = f.update().split(r.x, fo, fi, vectors * vec, TailStrategy::GuardWithIf).rfactor(fi, lane);
  lanes.bound(lane, 0, vectors * vec).split(lane, lo, li, vec).vectorize(li).unroll(lo);
  lanes.update().split(lane, lo, li, vec).vectorize(li).unroll(lo).always_partition(fo);
  return lanes;
}

} // namespace halformer::schedules::cpu
