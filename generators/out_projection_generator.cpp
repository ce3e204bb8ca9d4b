// out_projection: out(d_model, t, batch) = residual + b + sum_{d_k, heads} a . W
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class OutProjection : public Halide::Generator<OutProjection> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 4>> a{"a"}; // (d_k, t, heads, batch)
  Input<Buffer<float, 3>> w{"w"}; // (d_model, d_k, heads)
  Input<Buffer<float, 1>> b{"b"}; // (d_model)
  Input<Buffer<float, 3>> residual{"residual"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "out_projection");
    dsl::kernels::out_projection k;
    ctx.bind(k.a, a);
    ctx.bind(k.w, w);
    ctx.bind(k.b, b);
    ctx.bind(k.residual, residual);
    emit(ctx, ctx.lower(k.algorithm()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything

    schedules::out_projection(ctx, out, get_target(), knobs_for("out_projection"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::OutProjection, out_projection)
