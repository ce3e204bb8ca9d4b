// Every kernel's schedule for a Halide target: the x86 one (schedules/cpu, knob
// values per ISA) or the GPU one (schedules/gpu, knob values per API: cuda,
// opencl). Generators call these and never see which family they got.
//
// section(): the knobs a schedule declares and its revision, by knob-file section;
// the tuner reads them (knob_spaces.json) and the build uses them to check values.
#pragma once

#include "halformer/schedules/cpu/attention.hpp"
#include "halformer/schedules/cpu/embedding.hpp"
#include "halformer/schedules/cpu/ffn.hpp"
#include "halformer/schedules/cpu/projections.hpp"
#include "halformer/schedules/cpu/rows.hpp"
#include "halformer/schedules/gpu/attention.hpp"
#include "halformer/schedules/gpu/projections.hpp"
#include "halformer/schedules/gpu/rows.hpp"

namespace halformer::schedules {

enum class family { cpu, gpu };
inline family family_of(const Halide::Target& t) { return t.has_gpu_feature() ? family::gpu : family::cpu; }

struct section_info {
  std::vector<knob_decl> knobs;
  int revision;
};

// Knob-file sections and the schedules behind them, per family.
inline const std::map<std::string, section_info>& sections(family f) {
  static const std::map<std::string, section_info> cpu_sections{
      {"embedding", {cpu::embedding_knobs(), cpu::embedding_revision}},
      {"head_projection", {cpu::gemm_knobs(), cpu::gemm_revision}},
      {"attention", {cpu::attention_knobs(), cpu::attention_revision}},
      {"out_projection", {cpu::gemm_knobs(), cpu::out_projection_revision}},
      {"ffn", {cpu::ffn_knobs(), cpu::gemm_revision}},
      {"layernorm", {cpu::row_knobs(), cpu::row_revision}},
      {"softmax", {cpu::row_knobs(), cpu::row_revision}},
      {"logits", {cpu::gemm_knobs(), cpu::gemm_revision}},
      {"greedy_pick", {cpu::pick_knobs(), cpu::row_revision}}};
  static const std::map<std::string, section_info> gpu_sections{
      {"embedding", {gpu::embedding_knobs(), gpu::embedding_revision}},
      {"head_projection", {gpu::gemm_knobs(), gpu::gemm_revision}},
      {"attention", {gpu::attention_knobs(), gpu::attention_revision}},
      {"out_projection", {gpu::gemm_knobs(), gpu::gemm_revision}},
      {"ffn", {gpu::ffn_knobs(), gpu::gemm_revision}},
      {"layernorm", {gpu::row_knobs(), gpu::row_revision}},
      {"softmax", {gpu::row_knobs(), gpu::row_revision}},
      {"logits", {gpu::gemm_knobs(), gpu::gemm_revision}},
      {"greedy_pick", {gpu::pick_knobs(), gpu::row_revision}}};
  return f == family::gpu ? gpu_sections : cpu_sections;
}
inline const std::vector<knob_decl>& knobs_of(const std::string& section, const Halide::Target& t) {
  return sections(family_of(t)).at(section).knobs;
}

inline void embedding(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::embedding(ctx, out, k) : cpu::embedding(ctx, out, t, k);
}
inline void head_projection(const dsl::lowering& ctx, const std::vector<std::pair<std::string, Halide::Func>>& outs,
                            const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::head_projection(ctx, outs, k) : cpu::head_projection(ctx, outs, t, k);
}
inline void attention(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::attention(ctx, out, k) : cpu::attention(ctx, out, t, k);
}
inline void out_projection(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::out_projection(ctx, out, k) : cpu::out_projection(ctx, out, t, k);
}
inline void ffn(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::ffn(ctx, out, k) : cpu::ffn(ctx, out, t, k);
}
inline void layernorm(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::layernorm(ctx, out, k) : cpu::layernorm(ctx, out, t, k);
}
inline void softmax(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::softmax(ctx, out, k) : cpu::softmax(ctx, out, t, k);
}
inline void logits(const dsl::lowering& ctx, Halide::Func out, const Halide::Target& t, const knob_values& k) {
  family_of(t) == family::gpu ? gpu::logits(ctx, out, k) : cpu::logits(ctx, out, t, k);
}

inline void greedy_pick(const dsl::lowering& ctx, Halide::Func ids, Halide::Func log_probs, const Halide::Target& t,
                        const knob_values& k) {
  family_of(t) == family::gpu ? gpu::greedy_pick(ctx, ids, log_probs, k) : cpu::greedy_pick(ctx, ids, log_probs, t, k);
}

} // namespace halformer::schedules
