// attention: softmax(q.k / sqrt(d_k), masks) . v over all heads and batch rows.
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class Attention : public Halide::Generator<Attention> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 4>> q{"q"};               // (d_k, t, heads, batch)
  Input<Buffer<float, 4>> k{"k"};               // (d_k, tk, heads, batch)
  Input<Buffer<float, 4>> v{"v"};               // (d_k, tk, heads, batch)
  Input<Buffer<int32_t, 1>> lengths{"lengths"}; // valid keys per batch row
  Input<bool> causal{"causal"};
  Input<int32_t> offset{"offset"}; // position of query 0 among the keys
  Output<Buffer<float, 4>> out{"out"};

  void generate() {
    use_estimates(ctx, "attention");
    knob_values_ = knobs_for("attention");
    ctx.options["kv_chunk"] = knob_values_["kv_chunk"];
    dsl::kernels::attention a;
    ctx.bind(a.q, q);
    ctx.bind(a.k, k);
    ctx.bind(a.v, v);
    ctx.bind(a.lengths, lengths);
    ctx.bind(a.causal, causal);
    ctx.bind(a.offset, offset);
    emit(ctx, ctx.lower(a.algorithm()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    schedules::attention(ctx, out, get_target(), knob_values_);
  }

private:
  dsl::lowering ctx;
  schedules::knob_values knob_values_;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Attention, attention)
