// Binding buffer inputs: part of dsl::lowering (lower.hpp includes this file).
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

// A buffer input by its description (name and dimension symbols).
template <class Buffer> void lowering::bind_buffer(const argument& leaf, Buffer& buf) {
  const auto& names = leaf.dims;
  if (buf.dimensions() != leaf.rank())
    throw std::logic_error("bind " + leaf.name + ": rank mismatch");
  if (leaf.panel_inputs > 0) {
    bind_panels(leaf, buf);
    return;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string dim{names[i]};
    buf.dim(i).set_min(0);
    if (auto est = estimates.find(dim); est != estimates.end())
      buf.dim(i).set_estimate(0, est->second);
    if (auto e = extents_.find(dim); e != extents_.end())
      buf.dim(i).set_extent(e->second);
    else
      extents_[dim] = buf.dim(i).extent();
  }
  inputs_[leaf.name] = lowered{Halide::Func(buf), names};
  if constexpr (requires { Halide::ImageParam(buf).parameter(); })
    input_params_[leaf.name] = Halide::ImageParam(buf).parameter();
}
// A weight stored in panels (panels.hpp): the stored Func, and a logical view
// of the dot-product order for any other reader. Its extents follow from the
// dimension symbols', which inputs bound later may define: they are
// constrained when lowering starts (constrain_panels).
template <class Buffer> void lowering::bind_panels(const argument& leaf, Buffer& buf) {
  const std::size_t inputs = std::size_t(leaf.panel_inputs);
  if ((leaf.type != dtype::i8 && leaf.type != dtype::bf16 && leaf.type != dtype::f32) || inputs >= leaf.dims.size())
    throw std::logic_error("bind " + leaf.name +
                           ": panels hold int8, bfloat16 or float32 weights with input and output dims");
  const int group = panels::group_inputs(dtype_bytes(leaf.type));
  panel_input p{Halide::Func(buf), leaf.dims, int(inputs), group};
  // Groups of one input store the first input dim whole: its extent, where no
  // input bound before defines it (the embedding's d_model).
  const bool defines_first = group == 1 && extents_.emplace(leaf.dims[0], buf.dim(panels::extra_dims).extent()).second;
  std::vector<Halide::Expr> logical, at(leaf.dims.size() + panels::extra_dims);
  for (const auto& d : leaf.dims)
    logical.push_back(Halide::Var(d));
  panels::position(logical.data(), logical.size(), p.inputs, group, at.data());
  Halide::Func view(leaf.name + "_logical");
  view(vars({{}, leaf.dims})) = p.stored(at);
  inputs_[leaf.name] = lowered{view, leaf.dims};
  panel_inputs_[leaf.name] = p;
  if constexpr (requires { Halide::ImageParam(buf).parameter(); })
    input_params_[leaf.name] = Halide::ImageParam(buf).parameter();
  pending_panels_.push_back([this, &buf, p, defines_first] {
    buf.dim(0).set_extent(p.group), buf.dim(1).set_extent(panels::lanes);
    buf.dim(0).set_estimate(0, p.group), buf.dim(1).set_estimate(0, panels::lanes);
    buf.dim(1).set_stride(p.group);
    buf.dim(2).set_stride(p.group * panels::lanes);
    for (int d = 0; d < buf.dimensions(); ++d)
      buf.dim(d).set_min(0);
    for (std::size_t d = 0; d < p.dims.size(); ++d) {
      auto stored = buf.dim(int(d) + panels::extra_dims);
      if (d > 0 || !defines_first)
        stored.set_extent(panels::stored_extent(d, extent(p.dims[d]), p.inputs, p.group));
      if (auto est = estimates.find(p.dims[d]); est != estimates.end())
        stored.set_estimate(0, panels::stored_extent(d, est->second, p.inputs, p.group));
    }
  });
}

} // namespace halformer::dsl
