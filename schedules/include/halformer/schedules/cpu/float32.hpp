// CPU schedules of the float32 GEMM kernels (head projections, out projection,
// FFN, logits): register tiles over weights in panels (cpu/panels.hpp), the
// int8 kernels' schedules (cpu/quantized.hpp: dot_product_*) with the inputs
// read as they are. Panels against the row-major tiles these kernels had
// (bench/tile_rates.cpp, Zen 3, one core, 6 x 16 tiles in L2: 75-77 against
// 55-56 GFLOP/s; the FFN at 2 threads, batch 8 0.58 -> 0.48 ms, prefill
// 128 x 8 35.2 -> 29.1).
//
// The FFN's activated hidden layer (d_ff x rows) is computed at root or per
// row block (cpu/quantized.hpp, dot_product_ffn): at Transformer-base prefill
// shapes it is 2048 x 128 x 4 B = 1 MiB per sentence, read back while still in
// L2/L3, and two independent GEMM schedules keep each one at its best tile
// shape. `hidden_*` knobs size the first GEMM separately because its reduction
// is d_model long while the second's is d_ff.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/cpu/quantized.hpp"

namespace halformer::schedules::cpu {

// The inputs of the float32 GEMMs over panels: read in place, nothing to prepare.
struct float32_inputs {
  static constexpr const char* head_projection_x = "x";
  static std::vector<knob_decl> knobs() { return panel_knobs(); }
  static void gemm(const dsl::lowering& ctx, gemm_stage g, const Halide::Target& target, const knob_values& k,
                   const bucket_scope& in) {
    panel_gemm(ctx, g, target, k, in);
  }
  static void prepare(const dsl::lowering&, const std::string&, const Halide::Target&) {}
  static void ffn_hidden(const dsl::lowering& ctx, gemm_stage hidden, const Halide::Target& target,
                         const knob_values& k, const bucket_scope& in, const Halide::LoopLevel& at, bool) {
    hidden.out.compute_at(at);
    gemm(ctx, hidden, target, k, in);
  }
};

} // namespace halformer::schedules::cpu
