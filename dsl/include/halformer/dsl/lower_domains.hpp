// The reductions of the lowering's stages as RDoms, registered under the stage's name.
#pragma once

#include "halformer/dsl/lower.hpp"

namespace halformer::dsl {

// The reduction of a contraction as an RDom registered under the stage's name,
// and where each operand's dims sit on it; the innermost reduced dimension runs
// over whole blocks of `block`.
inline std::map<std::string, Halide::Expr> lowering::contraction_domain(const std::string& name, const lowered& r,
                                                                        const lowered& lhs, const lowered& rhs,
                                                                        int block) {
  const std::vector<std::string> reduced = reduced_dims(r, lhs, rhs);
  Halide::Region ranges;
  for (const auto& d : reduced)
    ranges.emplace_back(0, ranges.empty() ? (extent(d) + block - 1) / block * block : extent(d));
  Halide::RDom rd(ranges, name + "_r");
  std::map<std::string, Halide::Expr> at;
  for (std::size_t i = 0; i < reduced.size(); ++i)
    at[reduced[i]] = rd[i];
  rdoms_[name] = rd;
  if (block > 1)
    whole_blocks_[name] = extent(reduced.at(0)) % block == 0;
  return at;
}
// An RDom over whole `dims`, registered under `name` (its Halide name
// <name>_r), and where each dim sits on it.
inline std::map<std::string, Halide::Expr> lowering::reduction_over(const std::string& name,
                                                                    const std::vector<std::string>& dims) {
  Halide::Region ranges;
  for (const auto& d : dims)
    ranges.emplace_back(0, extent(d));
  Halide::RDom rd(ranges, name + "_r");
  std::map<std::string, Halide::Expr> at;
  for (std::size_t i = 0; i < dims.size(); ++i)
    at[dims[i]] = rd[int(i)];
  rdoms_[name] = rd;
  return at;
}

} // namespace halformer::dsl
