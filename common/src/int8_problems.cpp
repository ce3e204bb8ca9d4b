// The int8 embedding's problem and the int8 weights' random steps and value
// sums (the GEMMs' problems are gemm_problems.cpp's): tables in panels (dsl/panels.hpp) with one
// step per entry, as the loader quantizes them.
#include "int8_problems.hpp"

#include "halformer/dsl/panels.hpp"
#include "halformer/positions.hpp"

#include <cmath>

namespace halformer::problems::int8 {

// An int8 weight's steps, one per output, as the loader makes them for float
// weights of scale 1 / sqrt(inputs): near 1 / (127 sqrt(inputs)).
fb random_steps(std::vector<int> outputs, int inputs) {
  fb steps = random(std::move(outputs), 0.25f);
  steps.for_each_value([&](float& v) { v = (1 + std::abs(v)) / (127 * std::sqrt(float(inputs))); });
  return steps;
}

// The sum of each output's values of the dense int8 weight `w` (its first
// `inputs` elements are output 0's, and so on), as the loader makes them.
ib weight_sums(const i8b& w, int inputs, std::vector<int> outputs) {
  ib sums(std::move(outputs));
  sums.fill(0);
  const int8_t* v = w.data();
  for (std::size_t i = 0; i < std::size_t(w.number_of_elements()); ++i)
    sums.data()[i / std::size_t(inputs)] += v[i];
  return sums;
}

// The embedding of an int8 table with a step per entry (values up to ~2).
problem embedding(shape_args& s) {
  problem p;
  const int D = s["d_model"], V = s["vocab"], T = s["t"], B = s["batch"];
  const bool split = s.get("split", 0) != 0, fairseq = s.get("fairseq", 0) != 0;
  p.f_names = {"table_step", "out"}, p.i8_names = {"table"}, p.i_names = {"ids"}, p.outputs = {"out"};
  p.activations = {"ids", "out"};
  p.scalars = {{"d_model_size", halformer::i32_type, {.i32 = D}},
               {"scale", halformer::f32_type, {.f32 = std::sqrt(float(D))}},
               {"offset", halformer::i32_type, {.i32 = 0}},
               {"split_positions", halformer::bool_type, {.boolean = split}},
               {"frequency_step", halformer::f32_type, {.f32 = float(sinusoid_frequency_step(D, fairseq))}}};
  p.make = [=] {
    call_set c{{random_steps({V}, 1), fb(D, T, B)}, {ib(T, B)}};
    c.i8.push_back(dsl::panels::pack<i8b>(random_int8_weight({D, V}), 1));
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
      compare_row3(c.f[1], ref::embedding(table, {{c.i[0](t, b)}}, std::sqrt(double(D)), t, split, fairseq), t, b, m);
  };
  p.flops = 2.0 * D * T * B, p.bytes = (D + 4.0) * T * B; // the rows gathered and their steps
  // As the float embedding's (kernel_problems.cpp): the positions' float32 angles;
  // an entry's value q x step is one float32 rounding.
  p.tolerance = 1e-5 + 4.0 * T * std::ldexp(1.0, -24);
  return p;
}

} // namespace halformer::problems::int8
