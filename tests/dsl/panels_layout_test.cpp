// The panel packing (dsl/panels.hpp: pack, which the loader and the measuring
// problems use) against `position`, the layout's definition that the lowering
// reads it by: every logical element where `position` puts it, every other stored
// element (padding of the inputs to whole groups, of the outputs to whole panel
// groups) zero. Shapes with awkward extents: inputs not a multiple of a group,
// outputs not a multiple of 16 or 64, extents of 1, and several input and
// output dims.
#include "halformer/dsl/panels.hpp"

#include <HalideBuffer.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

namespace panels = halformer::dsl::panels;

namespace {
struct weight_shape {
  std::vector<int> dims;
  int inputs;
};

// Each logical element a distinct nonzero value (wrapping for int8, so checked
// together with its position), packed, then looked up by `position`.
template <class T> void check_packing(const weight_shape& s) {
  Halide::Runtime::Buffer<T> logical(s.dims);
  int next = 0;
  logical.for_each_value([&](T& v) { v = T(next++ % 120 + 1); });
  const auto packed = panels::pack<Halide::Runtime::Buffer<T>>(logical, s.inputs);
  const int group = panels::group_inputs(int(sizeof(T)));
  REQUIRE(packed.dimensions() == int(s.dims.size()) + panels::extra_dims);
  std::vector<char> placed(packed.number_of_elements(), 0);
  logical.for_each_element([&](const int* pos) {
    int stored[panels::max_rank + panels::extra_dims];
    panels::position(pos, s.dims.size(), s.inputs, group, stored);
    CHECK(packed(stored) == logical(pos));
    placed[std::size_t(&packed(stored) - packed.data())] = 1;
  });
  std::size_t padding_nonzero = 0;
  for (std::size_t i = 0; i < placed.size(); ++i)
    padding_nonzero += !placed[i] && packed.data()[i] != T(0);
  CHECK(padding_nonzero == 0);
}
} // namespace

TEST_CASE("pack puts every element where position says, and zeros elsewhere", "[panels]") {
  const std::vector<weight_shape> shapes{
      {{1, 1}, 1},      {{7, 5}, 1},      {{33, 17}, 1},      {{512, 65}, 1}, // (in, out)
      {{13, 16, 3}, 1}, {{64, 8, 70}, 2}, {{5, 3, 20, 2}, 2},                 // head and out projections
      {{333, 1, 7}, 1},
  };
  for (const auto& s : shapes) {
    CAPTURE(s.dims, s.inputs);
    check_packing<float>(s);
    check_packing<int8_t>(s);
  }
}
