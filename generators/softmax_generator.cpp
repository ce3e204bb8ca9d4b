// softmax / log_softmax over dim 0 of x(tk, t, batch), masked by key lengths and an
// optional causal rule with a query offset (the attention masks).
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class Softmax : public Halide::Generator<Softmax> {
public:
  HALFORMER_KNOB_PARAMS
  GeneratorParam<bool> log{"log", false};
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<int32_t, 1>> lengths{"lengths"};
  Input<bool> causal{"causal"};
  Input<int32_t> offset{"offset"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "softmax");
    dsl::kernels::softmax k;
    ctx.bind(k.x, x);
    ctx.bind(k.lengths, lengths);
    ctx.bind(k.causal, causal);
    ctx.bind(k.offset, offset);
    emit(ctx, ctx.lower(k.algorithm(log)), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything

    schedules::softmax(ctx, out, get_target(), knobs_for("softmax"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Softmax, softmax)
