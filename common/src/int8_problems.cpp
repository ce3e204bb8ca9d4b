// The int8 kernels' measuring problems (kernel_problems.cpp has the others): int8
// GEMM weights in panels (dsl/panels.hpp) with one step per output, as the loader
// quantizes them, verified against a float64 evaluation of the exact quantized
// arithmetic (halformer/reference).
#include "int8_problems.hpp"

#include "halformer/dsl/panels.hpp"
#include "halformer/reference/bfloat16.hpp"

#include <cmath>

namespace halformer::problems::int8 {

namespace {
// An int8 weight's steps, one per output, as the loader makes them for float
// weights of scale 1 / sqrt(inputs): near 1 / (127 sqrt(inputs)).
fb int8_steps(std::vector<int> outputs, int inputs) {
  fb steps = random(std::move(outputs), 0.25f);
  steps.for_each_value([&](float& v) { v = (1 + std::abs(v)) / (127 * std::sqrt(float(inputs))); });
  return steps;
}
// An int8 weight of logical extents `dims` in panels as the reference's (out, in) matrix.
ref::tensor int8_panels_to_ref(const i8b& packed, const std::vector<int>& dims, int inputs) {
  return ref::dot_weight_to_ref(dsl::panels::unpack<i8b>(packed, dims, inputs), inputs);
}
// A random int8 GEMM weight of logical extents `dims`, stored in panels as the kernels take it.
i8b random_int8_panels(const std::vector<int>& dims, int inputs) {
  return dsl::panels::pack<i8b>(random_int8_weight(dims), inputs);
}
} // namespace
// int8 weights (d_model, vocab) with one step per entry, as the loader quantizes
// them: steps near 1 / (127 sqrt(d_model)) keep the logits O(1).
problem logits(shape_args& s) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "w_step", "b", "out"}, p.i8_names = {"w"}, p.outputs = {"out"}, p.activations = {"x", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), int8_steps({V}, D), random({V}, 0.1f), fb(V, T, B)}};
    c.i8.push_back(random_int8_panels({D, V}, 1));
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w = int8_panels_to_ref(c.i8[0], {D, V}, 1), steps = ref::to_ref(c.f[1]), bias = ref::to_ref(c.f[2]);
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[3], ref::quantized_linear(row3(c.f[0], t, b), w, steps, bias), t, b, m);
  };
  p.flops = 2.0 * V * D * T * B, p.bytes = V * D + 4.0 * 2 * V;
  p.gemms = {{T * B, V, D}};
  // The int8 values and their int32 sums are exact; the dequantization is two
  // float32 products and a float32 sum (a few ulp, < 1e-6), while one integer step
  // off errs by > 1e-5 of the rms at the test shapes (d_model <= 257).
  p.tolerance = 1e-6;
  return p;
}

// The head projections with int8 weights (d_model, d_k, heads).
problem head_projection(shape_args& s, const std::string& which) {
  const int DK = s["d_k"], H = s["heads"], D = DK * H;
  problem p = head_projections(
      s, which,
      {weight_type::int8, 1.0,
       [D](call_set& c, const std::vector<int>& dims) {
         c.f.push_back(int8_steps({dims[1], dims[2]}, D)), c.i8.push_back(random_int8_panels(dims, 1));
       },
       [=](const call_set& c, int k) {
         return int8_panels_to_ref(c.i8[std::size_t(k)], {D, DK, H}, 1);
       },
       [](const call_set& c, int k, const ref::tensor& x, const ref::tensor& w, const ref::tensor& bias) {
         return ref::quantized_linear(x, w, ref::to_ref(c.f[std::size_t(1 + k)]), bias);
       }});
  p.tolerance = 1e-6; // as logits_int8
  return p;
}

// The out projection with int8 weights (d_k, heads, d_model): a row of all heads quantized as one.
problem out_projection(shape_args& s) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
  p.f_names = {"a", "w_step", "b", "residual", "out"}, p.i8_names = {"w"}, p.outputs = {"out"};
  p.activations = {"a", "residual", "out"};
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1), int8_steps({D}, D), random({D}, 0.1f), random({D, T, B}, 1), fb(D, T, B)}};
    c.i8.push_back(random_int8_panels({DK, H, D}, 2));
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w = int8_panels_to_ref(c.i8[0], {DK, H, D}, 2), steps = ref::to_ref(c.f[1]), bias = ref::to_ref(c.f[2]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto a = ref::merge_heads(ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, b, 1)));
      compare_row3(c.f[4], ref::add(row3(c.f[3], t, b), ref::quantized_linear(a, w, steps, bias)), t, b, m);
    }
  };
  p.flops = 2.0 * D * D * T * B, p.bytes = D * D + 4.0 * 2 * D;
  p.gemms = {{T * B, D, D}};
  p.tolerance = 1e-6; // as logits_int8
  return p;
}

problem ffn(shape_args& s, ref::activation act) {
  problem p;
  const int D = s["d_model"], F = s["d_ff"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "residual", "w1_step", "b1", "w2_step", "b2", "out"}, p.i8_names = {"w1", "w2"};
  p.outputs = {"out"}, p.activations = {"x", "residual", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({D, T, B}, 1), int8_steps({F}, D), random({F}, 0.1f), int8_steps({D}, F),
                random({D}, 0.1f), fb(D, T, B)}};
    c.i8 = {random_int8_panels({D, F}, 1), random_int8_panels({F, D}, 1)};
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    const auto w1 = int8_panels_to_ref(c.i8[0], {D, F}, 1), w2 = int8_panels_to_ref(c.i8[1], {F, D}, 1);
    const auto s1 = ref::to_ref(c.f[2]), b1 = ref::to_ref(c.f[3]), s2 = ref::to_ref(c.f[4]), b2 = ref::to_ref(c.f[5]);
    for (auto [t, b] : sample_rows(T, B)) {
      const auto want = ref::quantized_ffn(row3(c.f[0], t, b), row3(c.f[1], t, b), w1, s1, b1, w2, s2, b2, act);
      for (int o = 0; o < D; ++o)
        m.add(c.f[6](o, t, b), want.y.data[std::size_t(o)], want.slack.data[std::size_t(o)]);
    }
  };
  p.flops = 4.0 * D * F * T * B, p.bytes = 2.0 * D * F + 4.0 * (2 * F + 2 * D);
  p.gemms = {{T * B, F, D}, {T * B, D, F}};
  // As logits_int8, with the slack of hidden values at a rounding boundary
  // (ref::quantized_ffn).
  p.tolerance = 1e-6;
  return p;
}

// The embedding of an int8 table with a step per entry (values up to ~2).
problem embedding(shape_args& s) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  const bool split = s.get("split", 0) != 0;
  p.f_names = {"table_step", "out"}, p.i8_names = {"table"}, p.i_names = {"ids"}, p.outputs = {"out"};
  p.activations = {"ids", "out"};
  p.scalars = {{"d_model_size", halformer::i32_type, {.i32 = D}},
               {"scale", halformer::f32_type, {.f32 = std::sqrt(float(D))}},
               {"offset", halformer::i32_type, {.i32 = 0}},
               {"split_positions", halformer::bool_type, {.boolean = split}}};
  p.make = [=] {
    call_set c{{int8_steps({V}, 1), fb(D, T, B)}, {ib(T, B)}};
    c.i8.push_back(random_int8_panels({D, V}, 1));
    std::uniform_int_distribution<int> id(0, V - 1);
    c.i[0].for_each_value([&](int32_t& x) { x = id(rng); });
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    ref::tensor table = ref::to_ref(dsl::panels::unpack<i8b>(c.i8[0], {D, V}, 1)); // times each entry's step
    for (int v = 0; v < V; ++v)
      for (int d = 0; d < D; ++d)
        table(d, v) *= c.f[0](v);
    for (auto [t, b] : sample_rows(T, B))
      compare_row3(c.f[1], ref::embedding(table, {{c.i[0](t, b)}}, std::sqrt(double(D)), t, split), t, b, m);
  };
  p.flops = 2.0 * D * T * B, p.bytes = (D + 4.0) * T * B; // the rows gathered and their steps
  // As the float embedding's (kernel_problems.cpp): the positions' float32 angles;
  // an entry's value q x step is one float32 rounding.
  p.tolerance = 1e-5 + 4.0 * T * std::ldexp(1.0, -24);
  return p;
}

} // namespace halformer::problems::int8
