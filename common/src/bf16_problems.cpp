// The bfloat16 kernels' measuring problems: bfloat16 weights in panels (as the
// loader rounds and packs them), verified against a float64 evaluation of the
// bfloat16 arithmetic (halformer/reference/bfloat16.hpp).
#include "int8_problems.hpp"

#include "halformer/reference/bfloat16.hpp"

#include <cmath>

namespace halformer::problems::bf16 {

// bfloat16 products are exact in float32 and summed in float32: the error is a
// float32 reduction's (problem::tolerance's 1e-5), plus vdpbf16ps flushing
// products below 2^-126 to zero (far below 1e-5 of these O(1) rows). An input
// rounded to the wrong bfloat16 neighbour errs by 2^-9 of its value (~1e-3 of a
// row's rms), a wrong weight row by O(1).

problem logits(shape_args& s) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "b", "out"}, p.bf16_names = {"w"}, p.outputs = {"out"}, p.activations = {"x", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({V}, 0.1f), fb(V, T, B)}};
    c.bf16.push_back(random_bf16_panels({D, V}, 1, 1 / std::sqrt(float(D))));
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w = bf16_panels_to_ref(c.bf16[0], {D, V}, 1), bias = ref::to_ref(c.f[1]);
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[2], ref::bf16_linear(row3(c.f[0], t, b), w, bias), t, b, m);
  };
  p.flops = 2.0 * V * D * T * B, p.bytes = 2.0 * V * D + 4.0 * V;
  p.gemms = {{T * B, V, D}};
  return p;
}

// The head projections with bfloat16 weights (d_model, d_k, heads).
problem head_projection(shape_args& s, const std::string& which) {
  const int D = s["d_k"] * s["heads"];
  return head_projections(s, which,
                          {weight_type::bf16, 2.0,
                           [D](call_set& c, const std::vector<int>& dims) {
                             c.bf16.push_back(random_bf16_panels(dims, 1, 1 / std::sqrt(float(D))));
                           },
                           [dims = std::vector<int>{D, s["d_k"], s["heads"]}](const call_set& c, int k) {
                             return bf16_panels_to_ref(c.bf16[std::size_t(k)], dims, 1);
                           },
                           [](const call_set&, int, const ref::tensor& x, const ref::tensor& w,
                              const ref::tensor& bias) { return ref::bf16_linear(x, w, bias); }});
}

// The out projection with bfloat16 weights (d_k, heads, d_model).
problem out_projection(shape_args& s) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
  p.f_names = {"a", "b", "residual", "out"}, p.bf16_names = {"w"}, p.outputs = {"out"};
  p.activations = {"a", "residual", "out"};
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1), random({D}, 0.1f), random({D, T, B}, 1), fb(D, T, B)}};
    c.bf16.push_back(random_bf16_panels({DK, H, D}, 2, 1 / std::sqrt(float(D))));
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w = bf16_panels_to_ref(c.bf16[0], {DK, H, D}, 2), bias = ref::to_ref(c.f[1]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto a = ref::merge_heads(ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, b, 1)));
      compare_row3(c.f[3], ref::add(row3(c.f[2], t, b), ref::bf16_linear(a, w, bias)), t, b, m);
    }
  };
  p.flops = 2.0 * D * D * T * B, p.bytes = 2.0 * D * D + 4.0 * D;
  p.gemms = {{T * B, D, D}};
  return p;
}

problem ffn(shape_args& s, ref::activation act) {
  problem p;
  const int D = s["d_model"], F = s["d_ff"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "residual", "b1", "b2", "out"}, p.bf16_names = {"w1", "w2"}, p.outputs = {"out"};
  p.activations = {"x", "residual", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({D, T, B}, 1), random({F}, 0.1f), random({D}, 0.1f), fb(D, T, B)}};
    c.bf16 = {random_bf16_panels({D, F}, 1, 1 / std::sqrt(float(D))),
              random_bf16_panels({F, D}, 1, 1 / std::sqrt(float(F)))};
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w1 = bf16_panels_to_ref(c.bf16[0], {D, F}, 1), w2 = bf16_panels_to_ref(c.bf16[1], {F, D}, 1);
    const auto b1 = ref::to_ref(c.f[2]), b2 = ref::to_ref(c.f[3]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::bf16_ffn(row3(c.f[0], t, b), row3(c.f[1], t, b), w1, b1, w2, b2, act);
      for (int o = 0; o < D; ++o)
        m.add(c.f[4](o, t, b), want.y.data[std::size_t(o)], want.slack.data[std::size_t(o)]);
    }
  };
  p.flops = 4.0 * D * F * T * B, p.bytes = 4.0 * D * F + 4.0 * (F + D);
  p.gemms = {{T * B, F, D}, {T * B, D, F}};
  return p;
}

} // namespace halformer::problems::bf16
