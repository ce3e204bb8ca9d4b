// The float16 kernels' problems: kv_to_float16 (rounding, checked exactly against
// halformer/reference/float16.hpp) and the float16 helpers attention_f16kv's
// problem uses (kernel_problems.cpp).
#include "int8_problems.hpp"

#include "halformer/reference/float16.hpp"

#include <cmath>

namespace halformer::problems {

namespace {
f16b f16_buffer(const std::vector<int>& shape) {
  f16b b(shape);
  b.raw_buffer()->type = halformer::f16_type;
  return b;
}
} // namespace

f16b random_f16(std::vector<int> shape, float scale) {
  const fb values = random(shape, scale);
  f16b b = f16_buffer(shape);
  b.for_each_element([&](const int* pos) { b(pos) = ref::f16_bits(ref::round_to_f16(values(pos))); });
  return b;
}

ref::tensor f16_to_ref(const f16b& b) {
  std::vector<int> dims;
  for (int i = 0; i < b.dimensions(); ++i)
    dims.push_back(b.dim(i).extent());
  ref::tensor t(dims);
  std::size_t i = 0;
  b.for_each_element([&](const int* pos) { t.data[i++] = ref::f16_value(b(pos)); });
  return t;
}

namespace f16 {

// Values at float16's edges, written over the first elements of k (and negated
// over v's): past the largest finite value (saturated, never infinite), at
// 65520 (IEEE rounds it to infinity), a subnormal, exact ties (to even: 2^-25
// -> 0, 1 + 2^-11 -> 1, 1 + 3 2^-11 -> 1 + 2^-9).
const float edge_values[] = {70000.0f, -1e9f, 65519.0f, 65520.0f, 3e-8f, 0x1p-25f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f};

problem kv_to_float16(shape_args& s) {
  problem p;
  const int DK = s["d_k"], H = s["heads"], T = s["t"], B = s["batch"];
  p.f_names = {"k", "v"}, p.f16_names = {"k_f16", "v_f16"}, p.outputs = {"k_f16", "v_f16"};
  p.activations = {"k", "v"}; // the projection's output; the float16 ones are cache rows
  p.make = [=] {
    call_set c{{random({DK, T, H, B}, 1), random({DK, T, H, B}, 1)}};
    std::size_t i = 0;
    for (float e : edge_values)
      if (i < c.f[0].number_of_elements())
        c.f[0].data()[i] = e, c.f[1].data()[i++] = -e;
    c.f16 = {f16_buffer({DK, T, H, B}), f16_buffer({DK, T, H, B})};
    return c;
  };
  p.verify = [=](call_set& c, error_meter& m) {
    for (std::size_t which = 0; which < 2; ++which)
      for (auto [t, b] : sample_rows(T, B))
        for (int h = 0; h < H; ++h)
          for (int j = 0; j < DK; ++j)
            m.add(ref::f16_value(c.f16[which](j, t, h, b)), ref::round_to_f16(c.f[which](j, t, h, b)));
  };
  p.tolerance = 0; // rounding is exact: a neighbour's value would be a miss
  p.bytes = 4.0 * DK * H * T * B;
  return p;
}

} // namespace f16
} // namespace halformer::problems
