// greedy_pick: per logits row (vocab, t, batch), the best token id (ties: the
// lowest id) and its log-probability: all greedy decoding needs from a step, so
// on a GPU only these two numbers per row come back to the host.
#include "generator_common.hpp"

namespace halformer::generators {
class GreedyPick : public Halide::Generator<GreedyPick> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};                  // (vocab, t, batch)
  Output<Buffer<int32_t, 2>> ids{"ids"};           // (t, batch)
  Output<Buffer<float, 2>> log_probs{"log_probs"}; // (t, batch)

  void generate() {
    use_estimates(ctx, "greedy_pick");
    dsl::kernels::greedy_pick k;
    ctx.bind(k.x, x);
    emit(ctx, ctx.lower(k.ids()), ids);
    emit(ctx, ctx.lower(k.log_probs()), log_probs);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    schedules::greedy_pick(ctx, ids, log_probs, get_target(), knobs_for("greedy_pick"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::GreedyPick, greedy_pick)
