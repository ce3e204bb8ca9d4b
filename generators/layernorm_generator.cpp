// layernorm: out = LN(x) * gamma + beta over d_model; add_layernorm: LN(x + residual).
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {

class Layernorm : public Halide::Generator<Layernorm> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 1>> gamma{"gamma"};
  Input<Buffer<float, 1>> beta{"beta"};
  Input<float> eps{"eps"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "layernorm");
    dsl::kernels::layernorm k;
    ctx.bind(k.x, x);
    ctx.bind(k.gamma, gamma);
    ctx.bind(k.beta, beta);
    ctx.bind(k.eps, eps);
    emit(ctx, ctx.lower(k.algorithm()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything

    schedules::layernorm(ctx, out, get_target(), knobs_for("layernorm"));
  }

private:
  dsl::lowering ctx;
};

class AddLayernorm : public Halide::Generator<AddLayernorm> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 3>> residual{"residual"};
  Input<Buffer<float, 1>> gamma{"gamma"};
  Input<Buffer<float, 1>> beta{"beta"};
  Input<float> eps{"eps"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "layernorm");
    dsl::kernels::layernorm k;
    ctx.bind(k.x, x);
    ctx.bind(k.residual, residual);
    ctx.bind(k.gamma, gamma);
    ctx.bind(k.beta, beta);
    ctx.bind(k.eps, eps);
    emit(ctx, ctx.lower(k.algorithm_with_residual()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything

    schedules::layernorm(ctx, out, get_target(), knobs_for("layernorm"));
  }

private:
  dsl::lowering ctx;
};

} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Layernorm, layernorm)
HALIDE_REGISTER_GENERATOR(halformer::generators::AddLayernorm, add_layernorm)
