// q/k/v (d_k, t, heads, batch) = x(d_model, t, batch) . W + b, directly in head layout.
// Three generators over one DSL kernel: qkv_projection (self-attention),
// kv_projection (cross-attention keys and values of the encoder output, computed
// once per source), q_projection (cross-attention queries).
// Weights are (d_k, heads, d_model): PyTorch's [out][in] rows transposed at load.
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {

// Binds x once, then lowers one projection per (name, weight, bias, output).
struct projection_set {
  dsl::lowering ctx;
  dsl::kernels::head_projection k;
  std::vector<std::pair<std::string, Halide::Func>> outs;

  template <class X> void input(X& x) { ctx.bind(k.x, x); }
  template <class W, class B, class O> void add(const std::string& which, W& w, B& b, O& out) {
    ctx.bind(k.weight("w_" + which), w);
    ctx.bind(k.bias("b_" + which), b);
    emit(ctx, ctx.lower(k.algorithm(which)), out);
    outs.emplace_back(which + "_proj", out);
  }
  void schedule(const Halide::Target& target, const schedules::knob_values& knobs) {
    schedules::head_projection(ctx, outs, target, knobs);
  }
};

class QkvProjection : public Halide::Generator<QkvProjection> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 3>> w_q{"w_q"}, w_k{"w_k"}, w_v{"w_v"};
  Input<Buffer<float, 2>> b_q{"b_q"}, b_k{"b_k"}, b_v{"b_v"};
  Output<Buffer<float, 4>> q{"q"}, k{"k"}, v{"v"};

  void generate() {
    use_estimates(p.ctx, "head_projection");
    p.input(x);
    p.add("q", w_q, b_q, q);
    p.add("k", w_k, b_k, k);
    p.add("v", w_v, b_v, v);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    p.schedule(get_target(), knobs_for("head_projection"));
  }

private:
  projection_set p;
};

class KvProjection : public Halide::Generator<KvProjection> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 3>> w_k{"w_k"}, w_v{"w_v"};
  Input<Buffer<float, 2>> b_k{"b_k"}, b_v{"b_v"};
  Output<Buffer<float, 4>> k{"k"}, v{"v"};

  void generate() {
    use_estimates(p.ctx, "head_projection");
    p.input(x);
    p.add("k", w_k, b_k, k);
    p.add("v", w_v, b_v, v);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    p.schedule(get_target(), knobs_for("head_projection"));
  }

private:
  projection_set p;
};

class QProjection : public Halide::Generator<QProjection> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 3>> x{"x"};
  Input<Buffer<float, 3>> w_q{"w_q"};
  Input<Buffer<float, 2>> b_q{"b_q"};
  Output<Buffer<float, 4>> q{"q"};

  void generate() {
    use_estimates(p.ctx, "head_projection");
    p.input(x);
    p.add("q", w_q, b_q, q);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything
    p.schedule(get_target(), knobs_for("head_projection"));
  }

private:
  projection_set p;
};

} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::QkvProjection, qkv_projection)
HALIDE_REGISTER_GENERATOR(halformer::generators::KvProjection, kv_projection)
HALIDE_REGISTER_GENERATOR(halformer::generators::QProjection, q_projection)
