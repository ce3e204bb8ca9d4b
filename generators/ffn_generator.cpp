// ffn: out = residual + W2 act(W1 x + b1) + b2, act = relu or gelu (exact erf form).
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class Ffn : public Halide::Generator<Ffn> {
public:
  HALFORMER_KNOB_PARAMS
  GeneratorParam<std::string> activation{"activation", "relu"};
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 3>> residual{"residual"};
  Input<Buffer<float, 2>> w1{"w1"}; // (d_ff, d_model)
  Input<Buffer<float, 1>> b1{"b1"};
  Input<Buffer<float, 2>> w2{"w2"}; // (d_model, d_ff)
  Input<Buffer<float, 1>> b2{"b2"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "ffn");
    const std::string act = activation;
    if (act != "relu" && act != "gelu")
      throw std::runtime_error("activation must be relu or gelu, not " + act);
    dsl::kernels::ffn k;
    ctx.bind(k.x, x);
    ctx.bind(k.residual, residual);
    ctx.bind(k.w1, w1);
    ctx.bind(k.b1, b1);
    ctx.bind(k.w2, w2);
    ctx.bind(k.b2, b2);
    emit(ctx, ctx.lower(k.algorithm(act == "relu" ? dsl::op::activation::relu : dsl::op::activation::gelu)), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    schedules::ffn(ctx, out, get_target(), knobs_for("ffn"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Ffn, ffn)
