// What every halformer generator shares: the knob parameters the build and the
// tuner set, and the binding of a lowered DSL expression to an Output.
#pragma once

#include "halformer/dsl/kernels.hpp"
#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/kernels.hpp"

#include <Halide.h>

// knob_file: JSON knob values per ISA (schedules/knobs/*.json);
// knobs: "name:value/..." overrides (the tuner's candidates);
// variant: "kernel@bucket", read that variant's knobs (knobs.hpp: load_knobs).
#define HALFORMER_KNOB_PARAMS                                                                                          \
  GeneratorParam<std::string> knob_file{"knob_file", ""};                                                              \
  GeneratorParam<std::string> knobs{"knobs", ""};                                                                      \
  /* "kernel@bucket": this build is that kernel's variant for one shape bucket */                                      \
  GeneratorParam<std::string> variant{"variant", ""};                                                                  \
  /* "t:128/batch:8/...": extent estimates by dimension, for autoschedulers */                                         \
  GeneratorParam<std::string> estimates{"estimates", ""};                                                              \
  void use_estimates(halformer::dsl::lowering& c, const std::string& /*knob section*/) {                               \
    c.estimates = halformer::schedules::parse_overrides(estimates);                                                    \
  }                                                                                                                    \
  /* the knob values of `section` for this generator's target (CPU or GPU family) */                                   \
  halformer::schedules::knob_values knobs_for(const std::string& section) {                                            \
    return halformer::schedules::load_knobs(section, halformer::schedules::knobs_of(section, get_target()),            \
                                            get_target(), knob_file, knobs, variant);                                  \
  }

namespace halformer::generators {

// out(dims...) = l(dims...), with out's extents constrained to the dimension symbols.
template <class Output> void emit(dsl::lowering& ctx, const dsl::lowered& l, Output& out) {
  std::vector<Halide::Var> vars;
  for (const auto& d : l.dims)
    vars.push_back(ctx.var(d));
  out(vars) = l.f(vars);
  for (std::size_t i = 0; i < l.dims.size(); ++i) {
    out.dim(i).set_min(0);
    out.dim(i).set_extent(ctx.extent(l.dims[i]));
    if (auto e = ctx.estimates.find(l.dims[i]); e != ctx.estimates.end())
      out.dim(i).set_estimate(0, e->second);
  }
}

} // namespace halformer::generators
