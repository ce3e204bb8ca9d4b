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

inline std::vector<knob_decl> ffn_knobs() {
  auto k = gemm_knobs();
  for (auto d : gemm_knobs())
    k.push_back({"hidden_" + d.name, d.allowed, "first GEMM: " + d.meaning});
  return k;
}

inline void ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& target, const knob_values& k) {
  std::map<std::string, int> hidden_values;
  for (const auto& d : gemm_knobs())
    hidden_values[d.name] = k["hidden_" + d.name];
  knob_values hidden_knobs("ffn.hidden", gemm_knobs(), hidden_values);

  Halide::Func hidden_act = ctx.stage("hidden_act");
  hidden_act.compute_root();
  schedule_gemm({hidden_act,
                 ctx.stage("hidden"),
                 ctx.var("d_ff"),
                 ctx.var("t"),
                 {},
                 ctx.var("batch"),
                 {ctx.rdom("hidden").x},
                 ctx.extent("d_ff"),
                 ctx.extent("t"),
                 ctx.extent("batch")},
                target, hidden_knobs);
  schedule_gemm({out,
                 ctx.stage("proj"),
                 ctx.var("d_model"),
                 ctx.var("t"),
                 {},
                 ctx.var("batch"),
                 {ctx.rdom("proj").x},
                 ctx.extent("d_model"),
                 ctx.extent("t"),
                 ctx.extent("batch")},
                target, k);
}

} // namespace halformer::schedules::cpu
