// embedding: out(d_model, t, batch) = table(d_model, ids(t, batch)) * scale + PE(t + offset)
#include "generator_common.hpp"
#include "halformer/schedules/kernels.hpp"

namespace halformer::generators {
class Embedding : public Halide::Generator<Embedding> {
public:
  HALFORMER_KNOB_PARAMS
  Input<Buffer<float, 2>> table{"table"};
  Input<Buffer<int32_t, 2>> ids{"ids"};
  Input<float> scale{"scale"};
  Input<int32_t> offset{"offset"};
  Output<Buffer<float, 3>> out{"out"};

  void generate() {
    use_estimates(ctx, "embedding");
    dsl::kernels::embedding k;
    ctx.bind(k.table, table);
    ctx.bind(k.ids, ids);
    ctx.bind(k.scale, scale);
    ctx.bind(k.offset, offset);
    emit(ctx, ctx.lower(k.algorithm()), out);
  }
  void schedule() {
    if (using_autoscheduler())
      return; // Halide's autoscheduler schedules everything

    schedules::embedding(ctx, out, get_target(), knobs_for("embedding"));
  }

private:
  dsl::lowering ctx;
};
} // namespace halformer::generators
HALIDE_REGISTER_GENERATOR(halformer::generators::Embedding, embedding)
