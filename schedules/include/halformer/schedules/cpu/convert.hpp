// CPU schedule of kv_to_float16 (dsl/kernels_attention.hpp): keys and values in
// head layout (d_k, t, heads, batch) rounded to float16, elementwise. A position
// of a row is d_model values (all heads' d_k), rounded a vector at a time
// (vcvtps2ph with F16C, Halide's emulation without); the (t, batch) rows go in
// parallel tasks of `rows_per_task`. A decode step converts one position per row
// (2 x rows x d_model values, well under a microsecond at 32 rows), so its rows
// fit one or two tasks; the encoder memory's src x sources rows spread over every
// core.
#pragma once

#include "halformer/dsl/lower.hpp"
#include "halformer/schedules/buckets.hpp"
#include "halformer/schedules/cpu/lanes.hpp"

#include <string>
#include <utility>
#include <vector>

namespace halformer::schedules::cpu {

inline std::vector<knob_decl> convert_knobs() {
  return {{"rows_per_task", {1, 2, 4, 8, 16, 32, 64}, "positions (t, batch) per parallel task"}};
}

inline void kv_to_float16(const dsl::lowering&, const std::vector<std::pair<std::string, Halide::Func>>& outs,
                          const Halide::Target& target, const knob_values& k, const bucket_scope& in) {
  using namespace Halide;
  const int vec = target.natural_vector_size<float>();
  Var d("d_k"), t("t"), h("heads"), b("batch");
  for (const auto& [stage, f] : outs) {
    in(f).reorder(d, h, t, b).vectorize(d, vec, TailStrategy::GuardWithIf);
    in_row_tasks(in(f), k["rows_per_task"]);
  }
}

} // namespace halformer::schedules::cpu
