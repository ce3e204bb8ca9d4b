// CPU schedule of the float32 FFN: two GEMMs over weights in panels
// (cpu/panels.hpp), as the int8 FFN's (cpu/quantized.hpp: dot_product_ffn), the
// inputs read as they are. The activated hidden layer (d_ff x rows) is computed
// at root: at Transformer-base prefill shapes it is 2048 x 128 x 4 B = 1 MiB per
// sentence, read back while still in L2/L3, and two independent GEMM schedules
// keep each one at its best tile shape. `hidden_*` knobs size the first GEMM
// separately because its reduction is d_model long while the second's is d_ff.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/cpu/quantized.hpp"

namespace halformer::schedules::cpu {

// The inputs of the float32 GEMMs over panels: read in place, nothing to prepare.
struct float32_inputs {
  static std::vector<knob_decl> knobs() { return panel_knobs(); }
  static void gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in) {
    panel_gemm(ctx, g, target, k, in);
  }
  static void prepare(const dsl::lowering&, const std::string&, const Halide::Target&) {}
};

inline std::vector<knob_decl> ffn_knobs() { return ffn_knob_decls(panel_knobs()); }

inline void ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                const bucket_scope& in) {
  dot_product_ffn<float32_inputs>(ctx, out, target, k, in);
}

} // namespace halformer::schedules::cpu
