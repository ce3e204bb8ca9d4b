// The GEMM weights' memory layout ("panels"), one definition for the lowering
// (which reads it), the loader and the measuring problems (which write it) and
// the references (which read it back). No Halide here.
//
// A weight of logical dims (inputs..., outputs...) (the dot-product order: a
// weight row is one output's inputs) is stored as
//   (g, 16, ceil(in0 / g), in1..., ceil(out0 / 16), out1...)
// that is, panels of 16 outputs of the first output dim, each panel a run of
// 64-byte groups: the g consecutive inputs (of the first input dim) of each of
// its 16 outputs, g = 4 bytes / the element's size (int8: 4, float32: 1).
// One group is exactly what one step of a register tile multiplies:
// - int8: vpdpbusd with 4 input bytes broadcast to every lane;
// - float32: FMAs of one input broadcast with the 16 outputs' weights (one zmm,
//   two ymm);
// so 16 outputs' dot products advance by one group per step, the sums stay in
// one vector's lanes (no sums across lanes), each step reads the next cache line
// of the panel (a row-major weight's step reads one line a row stride further on:
// Zen 3, one core, 6 x 16 float tiles in L2, 75-77 against 55-56 GFLOP/s,
// bench/tile_rates.cpp), and the epilogue runs on whole vectors.
// The panels are padded to a multiple of `panel_group` (outputs past out0 and
// inputs past in0 hold zeros): a register tile of up to that many panels then
// never reads past the buffer, so its extent is a constant (a schedule bounds it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace halformer::dsl::panels {

inline constexpr int group_bytes = 4; // one output's bytes in a group (16 outputs: one 64-byte line)
inline constexpr int lanes = 16;      // outputs per panel (one AVX-512 vector of 32-bit sums)
inline constexpr int panel_group = 4; // stored panels: a multiple of this (the largest register tile)
// Inputs per output in one group, by the element's size in bytes.
constexpr int group_inputs(int element_bytes) { return group_bytes / element_bytes; }
inline constexpr int quad = group_inputs(1); // int8: vpdpbusd's 4 byte products per lane
// AMX (dsl/lower_amx.hpp): a tile step's bytes of each row (a tile row), and the
// rows a GEMM needs before it takes the tiles (16 a tile).
inline constexpr int amx_step_bytes = 64;
inline constexpr int amx_min_rows = 64;

// The stored dims: two more than the logical weight's.
inline constexpr int extra_dims = 2;

// The stored extent of logical dim `d` (extent `n`) of a weight whose first
// `inputs` dims index the input: groups of `group` (group_inputs) of the first
// input dim, whole panel groups of the first output dim. N: int, or a Halide
// Expr in the lowering.
template <class N> N stored_extent(std::size_t d, N n, int inputs, int group) {
  constexpr int outputs = lanes * panel_group;
  return d == 0 ? (n + group - 1) / group : d == std::size_t(inputs) ? (n + outputs - 1) / outputs * panel_group : n;
}

// The stored extents of a weight of logical extents `dims` whose first `inputs` dims index the input.
inline std::vector<int> extents(const std::vector<int>& dims, int inputs, int group) {
  if (inputs < 1 || std::size_t(inputs) >= dims.size())
    throw std::invalid_argument("panels: a weight needs input and output dims");
  std::vector<int> e{group, lanes};
  for (std::size_t d = 0; d < dims.size(); ++d)
    e.push_back(stored_extent(d, dims[d], inputs, group));
  return e;
}

// The stored coordinates (rank + extra_dims of them, into `stored`) of the
// logical position `pos` (rank `rank`). T: int, or a Halide Expr in the lowering.
template <class T> void position(const T* pos, std::size_t rank, int inputs, int group, T* stored) {
  stored[0] = pos[0] % group, stored[1] = pos[inputs] % lanes;
  for (std::size_t d = 0; d < rank; ++d)
    stored[d + 2] = d == 0 ? pos[0] / group : d == std::size_t(inputs) ? pos[d] / lanes : pos[d];
}

inline constexpr std::size_t max_rank = 14; // of a logical weight (Halide buffers hold 16 dims)

// The group of a Halide buffer type's elements.
template <class Buffer> constexpr int group_of() { return group_inputs(int(sizeof(typename Buffer::ElemType))); }

// The dense logical weight `rows` (extents `dims`, first dim fastest: PyTorch's
// [out][in] rows as they are) packed into the dense `packed` (of `extents`).
// A panel's run of groups is written in the order it lies in memory, each of its
// 16 output rows read in turn: a run at d_model 512 is 2 KiB (int8) or 32 KiB
// (float32), in L1 while its rows are copied in. Each value is stored as
// `convert(output, value)` gives it, `output` its weight row (flattened output
// index): the loader quantizes float rows to int8 so. Padding is left as
// `packed` holds it (the caller zeroes it).
struct same_value {
  template <class V> V operator()(std::size_t, V value) const { return value; }
};
template <class T, class Source, class Convert = same_value>
void pack_dense(const Source* rows, const std::vector<int>& dims, int inputs, T* packed, Convert convert = {}) {
  constexpr std::size_t group = std::size_t(group_inputs(int(sizeof(T))));
  const auto first_output = std::size_t(inputs);
  const auto in0 = std::size_t(dims[0]), out0 = std::size_t(dims[first_output]);
  std::size_t in_rest = 1, out_rest = 1; // the input's and the output's further dims
  for (std::size_t d = 1; d < dims.size(); ++d)
    if (d != first_output)
      (d < first_output ? in_rest : out_rest) *= std::size_t(dims[d]);
  const auto groups = std::size_t(stored_extent<int>(0, int(in0), inputs, int(group)));
  const auto panel_count = std::size_t(stored_extent<int>(first_output, int(out0), inputs, int(group)));
  const std::size_t line = lanes * group, run = groups * line; // a group of 16 outputs; a panel's run
  for (std::size_t r = 0; r < out_rest; ++r)
    for (std::size_t p = 0; p < panel_count; ++p)
      for (std::size_t j = 0; j < in_rest; ++j) {
        T* to = packed + ((r * panel_count + p) * in_rest + j) * run;
        for (std::size_t lane = 0; lane < std::size_t(lanes) && p * lanes + lane < out0; ++lane) {
          const std::size_t output = r * out0 + p * lanes + lane;
          const Source* from = rows + (output * in_rest + j) * in0;
          for (std::size_t i = 0; i < in0; ++i)
            to[i / group * line + lane * group + i % group] = T(convert(output, from[i]));
        }
      }
}

// The dense logical weight `rows` (extents `dims`) packed into a new buffer of
// type Packed (a Halide buffer type holding `extents`), through `convert`.
template <class Packed, class Source, class Convert = same_value>
Packed pack_rows(const Source* rows, const std::vector<int>& dims, int inputs, Convert convert = {}) {
  Packed packed(extents(dims, inputs, group_of<Packed>()));
  std::fill_n(packed.data(), packed.number_of_elements(), typename Packed::ElemType(0));
  pack_dense(rows, dims, inputs, packed.data(), convert);
  return packed;
}

// `logical` (a buffer of int8 or float values in the dot-product order) packed
// into a new buffer of type Packed.
template <class Packed, class Logical> Packed pack(const Logical& logical, int inputs) {
  if (std::size_t(logical.dimensions()) > max_rank)
    throw std::invalid_argument("panels: a weight of more than 14 dims");
  std::vector<int> dims;
  for (int d = 0; d < logical.dimensions(); ++d)
    dims.push_back(logical.dim(d).extent());
  return pack_rows<Packed>(logical.copy().data(), dims, inputs); // the copy: dense
}

// The logical weight (extents `dims`, type Logical) held by `packed`.
template <class Logical, class Packed> Logical unpack(const Packed& packed, const std::vector<int>& dims, int inputs) {
  constexpr int group = group_of<Packed>();
  if (dims.size() > max_rank)
    throw std::invalid_argument("panels: a weight of more than 14 dims");
  Logical logical(dims);
  logical.for_each_element([&](const int* pos) {
    int stored[max_rank + extra_dims];
    position(pos, dims.size(), inputs, group, stored);
    logical(pos) = packed(stored);
  });
  return logical;
}

} // namespace halformer::dsl::panels
