// GPU schedule of sample_pick (dsl/lower_sampling.hpp): one block per row. The
// allowed logits, then each entry's key and weight, are written to global
// memory first (a row of 32000 is more than shared memory holds), `threads`
// entries per block, between them the rows' maxima (a block each); the lists'
// scatters run one thread per row. Every sum over the vocabulary is a two-level
// block reduction (rows.hpp), the chunks' sums one thread per chunk, and the
// walks and the searches' bounds one thread.
#pragma once

#include "halformer/schedules/gpu/rows.hpp"

namespace halformer::schedules::gpu {

inline std::vector<knob_decl> sampling_knobs() { return row_knobs(); }

inline void sample_pick(const dsl::lowering& ctx, Halide::Func ids, Halide::Func log_probs, const knob_values& k) {
  using namespace Halide;
  Var t("t"), b("batch"), row("row"), v("vocab"), vo("vo"), vi("vi"), c("sample_chunk"), co("co"), ci("ci");
  Func sample = ctx.stage("sample");
  sample.compute_root().fuse(t, b, row).gpu_blocks(row);
  ids.fuse(t, b, row).gpu_tile(row, vo, vi, k["threads"], TailStrategy::GuardWithIf);
  // Rows of the vocabulary in global memory (a row of 32000 entries is more than
  // shared memory holds): `threads` entries per block.
  const auto in_blocks = [&](Func f) {
    f.compute_root().fuse(t, b, row).split(v, vo, vi, k["threads"], TailStrategy::GuardWithIf).gpu_blocks(vo, row);
    f.gpu_threads(vi);
  };
  Func allowed = ctx.stage("sample_allowed"), top = ctx.stage("sample_top");
  in_blocks(allowed);
  for (int u = 0; u < 2; ++u)
    allowed.update(u).fuse(t, b, row).gpu_blocks(row);
  top.compute_root().fuse(t, b, row).gpu_blocks(row);
  RVar ro("ro"), ri("ri");
  Var lane("lane");
  Func partial =
      top.update().split(ctx.rdom("sample_top").x, ro, ri, k["threads"], TailStrategy::GuardWithIf).rfactor(ri, lane);
  top.update().fuse(t, b, row).gpu_blocks(row);
  partial.compute_at(top, row).gpu_threads(lane);
  partial.update().gpu_threads(lane);
  for (const char* s : {"sample_keys", "sample_weights"}) // after the rows' maxima
    in_blocks(ctx.stage(s));
  for (const std::string& s : dsl::sampling::row_sums("sample"))
    if (s != "sample_top")
      detail::block_reduction(ctx.stage(s), ctx.rdom(s), sample, row, k);
  for (int i = 0; i < dsl::sampling::search_steps; ++i)
    for (const char* search : {"sample_topk_bound_", "sample_topp_bound_", "sample_topk_mid_", "sample_topp_mid_"})
      ctx.stage(search + std::to_string(i)).compute_at(sample, row);
  for (const char* s : {"sample_chunk_mass", "sample_chunk_ties"}) {
    Func f = ctx.stage(s);
    f.compute_at(sample, row).split(c, co, ci, k["threads"], TailStrategy::GuardWithIf).gpu_threads(ci);
    f.update().split(c, co, ci, k["threads"], TailStrategy::GuardWithIf).gpu_threads(ci);
  }
  for (const char* s : {"sample_scan", "sample_first", "sample_last", "sample_walk"})
    ctx.stage(s).compute_at(sample, row);
  log_probs.fuse(t, b, row).gpu_blocks(row);
  detail::block_reduction(ctx.stage("sample_log_prob_max"), ctx.rdom("sample_log_prob"), log_probs, row, k);
  detail::block_reduction(ctx.stage("sample_log_prob_sum"), ctx.rdom("sample_log_prob"), log_probs, row, k);
  ctx.stage("sample_log_prob_max").update(1).unscheduled(); // the listed tokens: a few per row
  ctx.stage("sample_log_prob_fix").compute_at(log_probs, row);
  ctx.stage("sample_forced").compute_root(); // on the host: its range check is a require()
}

} // namespace halformer::schedules::gpu
