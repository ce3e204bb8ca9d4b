// CPU schedule of the FFN: two register-blocked GEMMs. The activated hidden layer
// (d_ff x rows) is computed at root: at Transformer-base prefill shapes it is
// 2048 x 128 x 4 B = 1 MiB per sentence, read back while still in L2/L3, and two
// independent GEMM schedules keep each one at its best tile shape. Both GEMMs use
// the gemm knobs; `hidden_*` knobs size the first GEMM separately because its
// reduction is d_model long while the second's is d_ff long.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/cpu/gemm.hpp"

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> ffn_knobs() { return ffn_knob_decls(gemm_knobs()); }

inline void ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k,
                const bucket_scope& in) {
  auto [hidden, proj] = ffn_stages(ctx, out);
  hidden.out.compute_root(); // the activated hidden layer
  schedule_gemm(hidden, target, hidden_knobs(k, gemm_knobs()), in);
  schedule_gemm(proj, target, k, in);
}

} // namespace halformer::schedules::cpu
