// logits: out(vocab, t, batch) = x(d_model, t, batch) . W(vocab, d_model) + b
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class Logits : public Halide::Generator<Logits> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 2>> w{"w"};
  Input<Buffer<float, 1>> b{"b"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "logits");
    dsl::kernels::logits k;
    ctx.bind(k.x, x);
    ctx.bind(k.w, w);
    ctx.bind(k.b, b);
    emit(ctx, ctx.lower(k.algorithm()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    schedules::logits(ctx, out, get_target(), knobs_for("logits"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Logits, logits)
