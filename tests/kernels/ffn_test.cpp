// The position-wise FFN with ReLU, exact GELU and SiLU (swish) against the
// reference, its weights in panels (halformer/dsl/panels.hpp): widths of partial
// panels and panel groups (7, 13, 200, 333), decode steps of 1-8 rows (the
// register tiles' rows and their remainders) and prefill.
#include "support.hpp"

using test::Buffer;

TEST_CASE("ffn (relu, gelu and silu) matches the reference", "[ffn]") {
  struct shape {
    int d_model, d_ff, t, batch;
  };
  for (auto act : {ref::activation::relu, ref::activation::gelu, ref::activation::silu})
    for (const auto& s : {shape{7, 13, 1, 1}, shape{64, 256, 7, 2}, shape{48, 333, 64, 3}, shape{512, 2048, 9, 1},
                          shape{96, 200, 1, 8}, shape{33, 70, 1, 5}, shape{40, 100, 1, 3}}) {
      INFO("activation " << int(act) << " d_model " << s.d_model << " d_ff " << s.d_ff << " t " << s.t << " batch "
                         << s.batch);
      auto x = test::random({s.d_model, s.t, s.batch}), residual = test::random({s.d_model, s.t, s.batch});
      auto w1_rows = test::random({s.d_model, s.d_ff}, 1.0f / std::sqrt(float(s.d_model)));
      auto w2_rows = test::random({s.d_ff, s.d_model}, 1.0f / std::sqrt(float(s.d_ff)));
      auto w1 = test::panels(w1_rows, 1), w2 = test::panels(w2_rows, 1);
      auto b1 = test::random({s.d_ff}, 0.1f), b2 = test::random({s.d_model}, 0.1f);
      Buffer<float> out(s.d_model, s.t, s.batch);
      REQUIRE_OK(act == ref::activation::relu   ? HF(ffn_relu)(x, residual, w1, b1, w2, b2, out)
                 : act == ref::activation::gelu ? HF(ffn_gelu)(x, residual, w1, b1, w2, b2, out)
                                                : HF(ffn_silu)(x, residual, w1, b1, w2, b2, out));
      CHECK_CLOSE(out,
                  ref::ffn(test::to_ref(x), test::to_ref(residual), test::dot_weight_to_ref(w1_rows, 1),
                           test::to_ref(b1), test::dot_weight_to_ref(w2_rows, 1), test::to_ref(b2), act),
                  test::rtol);
    }
}
