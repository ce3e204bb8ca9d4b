// The GEMM kernels' problems (logits, head projections, out projection, FFN),
// each written once over its weights' type (problems.hpp: gemm_weights):
// float32, int8 with a step per output, or bfloat16, all in panels
// (dsl/panels.hpp) as the runtime loads them, verified against a float64
// evaluation of the type's arithmetic (halformer/reference).
#include "halformer/problems.hpp"

#include "int8_problems.hpp"

#include "halformer/dsl/panels.hpp"
#include "halformer/reference/bfloat16.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace halformer::problems {

namespace {
std::size_t index_of(const std::vector<std::string>& names, const std::string& n) {
  const auto it = std::find(names.begin(), names.end(), n);
  if (it == names.end())
    throw std::logic_error("problem has no argument '" + n + "'");
  return std::size_t(it - names.begin());
}

gemm_epilogue::activation epilogue_activation(ref::activation a) {
  using e = gemm_epilogue::activation;
  return a == ref::activation::relu ? e::relu : a == ref::activation::gelu ? e::gelu : e::silu;
}

int product(const std::vector<int>& dims, std::size_t begin, std::size_t end) {
  return std::accumulate(dims.begin() + std::ptrdiff_t(begin), dims.begin() + std::ptrdiff_t(end), 1,
                         std::multiplies<>());
}
} // namespace

double gemm_weights::bytes() const {
  return type == weight_type::float32 ? 4.0 : type == weight_type::bf16 ? 2.0 : 1.0;
}

double gemm_weights::tolerance() const {
  // int8: the int8 values and their int32 sums are exact; the dequantization is
  // two float32 products and a float32 sum (a few ulp, < 1e-6), while one integer
  // step off errs by > 1e-5 of the rms at the test shapes (d_model <= 257).
  // bfloat16: products exact in float32 and summed in float32, so a float32
  // reduction's error (problem::tolerance's 1e-5), plus vdpbf16ps flushing
  // products below 2^-126 to zero (far below 1e-5 of these O(1) rows); an input
  // rounded to the wrong bfloat16 neighbour errs by 2^-9 of its value.
  return type == weight_type::int8 ? 1e-6 : problem().tolerance;
}

void gemm_weights::name(problem& p, const std::string& w) const {
  if (type == weight_type::float32)
    p.f_names.push_back(w);
  if (type == weight_type::int8)
    p.f_names.push_back(w + "_step"), p.i_names.push_back(w + "_sums"), p.i8_names.push_back(w);
  if (type == weight_type::bf16)
    p.bf16_names.push_back(w);
}

gemm_weights::slot gemm_weights::slot_of(const problem& p, const std::string& w) const {
  if (type == weight_type::int8)
    return {index_of(p.i8_names, w), index_of(p.f_names, w + "_step")};
  return {index_of(type == weight_type::bf16 ? p.bf16_names : p.f_names, w), 0};
}

// Normal weights of deviation 1 / sqrt(inputs), so that outputs stay O(1); int8
// weights uniform in [-127, 127] with steps near 1 / (127 sqrt(inputs)), as the
// loader quantizes such float weights.
void gemm_weights::add(call_set& c, const std::vector<int>& dims, int inputs) const {
  const int in = product(dims, 0, std::size_t(inputs));
  const float scale = 1 / std::sqrt(float(in));
  if (type == weight_type::float32)
    c.f.push_back(random_panels(dims, inputs, scale));
  if (type == weight_type::bf16)
    c.bf16.push_back(random_bf16_panels(dims, inputs, scale));
  if (type == weight_type::int8) {
    const std::vector<int> outputs(dims.begin() + inputs, dims.end());
    const i8b w = random_int8_weight(dims);
    c.f.push_back(int8::random_steps(outputs, in));
    c.i.push_back(int8::weight_sums(w, in, outputs));
    c.i8.push_back(dsl::panels::pack<i8b>(w, inputs));
  }
}

ref::tensor gemm_weights::reference(const call_set& c, slot s, const std::vector<int>& dims, int inputs) const {
  if (type == weight_type::int8)
    return ref::dot_weight_to_ref(dsl::panels::unpack<i8b>(c.i8.at(s.weight), dims, inputs), inputs);
  if (type == weight_type::bf16)
    return bf16_panels_to_ref(c.bf16.at(s.weight), dims, inputs);
  return panels_to_ref(c.f.at(s.weight), dims, inputs);
}

ref::tensor gemm_weights::linear(const call_set& c, slot s, const ref::tensor& x, const ref::tensor& w,
                                 const ref::tensor& bias) const {
  if (type == weight_type::int8)
    return ref::quantized_linear(x, w, ref::to_ref(c.f.at(s.step)), bias);
  if (type == weight_type::bf16)
    return ref::bf16_linear(x, w, bias);
  return ref::linear(x, w, bias);
}

gemm_weights::ffn_result gemm_weights::ffn(const call_set& c, slot s1, slot s2, const ffn_operands& o,
                                           ref::activation act) const {
  if (type == weight_type::int8) {
    auto r = ref::quantized_ffn(o.x, o.residual, o.w1, ref::to_ref(c.f.at(s1.step)), o.b1, o.w2,
                                ref::to_ref(c.f.at(s2.step)), o.b2, act);
    return {std::move(r.y), std::move(r.slack)};
  }
  if (type == weight_type::bf16) {
    auto r = ref::bf16_ffn(o.x, o.residual, o.w1, o.b1, o.w2, o.b2, act);
    return {std::move(r.y), std::move(r.slack)};
  }
  ref::tensor y = ref::ffn(o.x, o.residual, o.w1, o.b1, o.w2, o.b2, act);
  ref::tensor slack(y.dims);
  return {std::move(y), std::move(slack)};
}

// What a call moves from memory besides its activations: the weights of
// `weight_elements` elements, and per output (`outputs`) a float32 bias and, for
// int8, a float32 step and an int32 sum.
double gemm_weights::call_bytes(double weight_elements, double outputs) const {
  return bytes() * weight_elements + 4.0 * (type == weight_type::int8 ? 3 : 1) * outputs;
}

// Weights (d_model, vocab).
problem logits(shape_args& s, const gemm_weights& w) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  p.f_names = {"x"};
  w.name(p, "w");
  p.f_names.insert(p.f_names.end(), {"b", "out"});
  p.outputs = {"out"}, p.activations = {"x", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1)}};
    w.add(c, {D, V}, 1);
    c.f.push_back(random({V}, 0.1f)), c.f.push_back(fb(V, T, B));
    return c;
  };
  const auto slot = w.slot_of(p, "w");
  const std::size_t b = index_of(p.f_names, "b"), out = index_of(p.f_names, "out");
  p.verify = [=](call_set& c, error_meter& m) {
    const auto weight = w.reference(c, slot, {D, V}, 1), bias = ref::to_ref(c.f[b]);
    for (auto [t, bb] : sample_rows(T, B))
      compare_row3(c.f[out], w.linear(c, slot, row3(c.f[0], t, bb), weight, bias), t, bb, m);
  };
  p.flops = 2.0 * V * D * T * B, p.bytes = w.call_bytes(double(V) * D, V);
  p.gemms = {{T * B, V, D}};
  p.tolerance = w.tolerance();
  return p;
}

// which: the projections computed, e.g. "qkv"; weights (d_model, d_k, heads).
// Arguments: x, the projections' float inputs (float32 weights, or int8 weights'
// steps w_<p>_step), their biases and their outputs.
problem head_projections(shape_args& s, const std::string& which, const gemm_weights& w) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
  const int n = int(which.size());
  p.f_names = {"x"};
  for (char c : which)
    w.name(p, std::string("w_") + c);
  for (char c : which)
    p.f_names.push_back(std::string("b_") + c);
  for (char c : which)
    p.f_names.push_back(std::string(1, c)), p.outputs.push_back(std::string(1, c));
  p.activations = p.outputs;
  p.activations.push_back("x");
  p.make = [=] {
    call_set c{{random({D, T, B}, 1)}};
    for (int k = 0; k < n; ++k)
      w.add(c, {D, DK, H}, 1);
    for (int k = 0; k < n; ++k)
      c.f.push_back(random({DK, H}, 0.1f));
    for (int k = 0; k < n; ++k)
      c.f.push_back(fb(DK, T, H, B));
    return c;
  };
  std::vector<gemm_weights::slot> slots;
  std::vector<std::size_t> biases, outs;
  for (char c : which) {
    slots.push_back(w.slot_of(p, std::string("w_") + c));
    biases.push_back(index_of(p.f_names, std::string("b_") + c));
    outs.push_back(index_of(p.f_names, std::string(1, c)));
  }
  p.verify = [=](call_set& c, error_meter& m) {
    for (std::size_t k = 0; k < std::size_t(n); ++k) {
      const auto weight = w.reference(c, slots[k], {D, DK, H}, 1), bias = ref::head_bias_to_ref(c.f[biases[k]]);
      for (auto [t, b] : sample_rows(T, B))
        compare_heads(c.f[outs[k]], w.linear(c, slots[k], row3(c.f[0], t, b), weight, bias), t, b, m);
    }
  };
  p.flops = 2.0 * n * D * D * T * B;
  p.bytes = w.call_bytes(double(n) * D * D, double(n) * D);
  p.gemms.assign(std::size_t(n), {T * B, D, D});
  p.tolerance = w.tolerance();
  return p;
}

// Weights (d_k, heads, d_model): a row of all heads is one input row.
problem out_projection(shape_args& s, const gemm_weights& w) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"], D = DK * H;
  p.f_names = {"a"};
  w.name(p, "w");
  p.f_names.insert(p.f_names.end(), {"b", "residual", "out"});
  p.outputs = {"out"}, p.activations = {"a", "residual", "out"};
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1)}};
    w.add(c, {DK, H, D}, 2);
    c.f.push_back(random({D}, 0.1f)), c.f.push_back(random({D, T, B}, 1)), c.f.push_back(fb(D, T, B));
    return c;
  };
  const auto slot = w.slot_of(p, "w");
  const std::size_t b = index_of(p.f_names, "b"), residual = index_of(p.f_names, "residual"),
                    out = index_of(p.f_names, "out");
  p.verify = [=](call_set& c, error_meter& m) {
    const auto weight = w.reference(c, slot, {DK, H, D}, 2), bias = ref::to_ref(c.f[b]); // (out, h * d_k + j)
    for (auto [t, bb] : sample_rows(T, B)) {
      const auto a = ref::merge_heads(ref::to_ref(c.f[0].cropped(1, t, 1).cropped(3, bb, 1)));
      compare_row3(c.f[out], ref::add(row3(c.f[residual], t, bb), w.linear(c, slot, a, weight, bias)), t, bb, m);
    }
  };
  p.flops = 2.0 * D * D * T * B, p.bytes = w.call_bytes(double(D) * D, D);
  p.gemms = {{T * B, D, D, {.residual = true}}};
  p.tolerance = w.tolerance();
  return p;
}

// Weights (d_model, d_ff) and (d_ff, d_model). int8 and bfloat16 hidden values
// at a rounding boundary may round either way (the references' slack).
problem ffn(shape_args& s, const gemm_weights& w, ref::activation act) {
  problem p;
  const int D = s["d_model"], F = s["d_ff"], T = s["t"], B = s["batch"];
  p.f_names = {"x", "residual"};
  w.name(p, "w1");
  p.f_names.push_back("b1");
  w.name(p, "w2");
  p.f_names.insert(p.f_names.end(), {"b2", "out"});
  p.outputs = {"out"}, p.activations = {"x", "residual", "out"};
  p.make = [=] {
    call_set c{{random({D, T, B}, 1), random({D, T, B}, 1)}};
    w.add(c, {D, F}, 1);
    c.f.push_back(random({F}, 0.1f));
    w.add(c, {F, D}, 1);
    c.f.push_back(random({D}, 0.1f)), c.f.push_back(fb(D, T, B));
    return c;
  };
  const auto s1 = w.slot_of(p, "w1"), s2 = w.slot_of(p, "w2");
  const std::size_t b1 = index_of(p.f_names, "b1"), b2 = index_of(p.f_names, "b2"), out = index_of(p.f_names, "out");
  p.verify = [=](call_set& c, error_meter& m) {
    gemm_weights::ffn_operands o{{},
                                 {},
                                 w.reference(c, s1, {D, F}, 1),
                                 ref::to_ref(c.f[b1]),
                                 w.reference(c, s2, {F, D}, 1),
                                 ref::to_ref(c.f[b2])};
    for (auto [t, b] : sample_rows(T, B)) {
      o.x = row3(c.f[0], t, b), o.residual = row3(c.f[1], t, b);
      const auto want = w.ffn(c, s1, s2, o, act);
      for (int i = 0; i < D; ++i)
        m.add(c.f[out](i, t, b), want.y.data[std::size_t(i)], want.slack.data[std::size_t(i)]);
    }
  };
  p.flops = 4.0 * D * F * T * B, p.bytes = w.call_bytes(2.0 * D * F, double(F) + D);
  p.gemms = {{T * B, F, D, {.act = epilogue_activation(act), .feeds_next = true}}, {T * B, D, F, {.residual = true}}};
  p.tolerance = w.tolerance();
  return p;
}

} // namespace halformer::problems
