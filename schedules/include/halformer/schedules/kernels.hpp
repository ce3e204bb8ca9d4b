// Every kernel's schedule for a Halide target: the x86 one (schedules/cpu, knob
// values per ISA) or the GPU one (schedules/gpu, knob values per API: cuda,
// opencl). Generators call these and never see which family they got.
//
// section(): the knobs a schedule declares and its revision (a hash of its source,
// schedules/CMakeLists.txt), by knob-file section; the tuner reads them
// (knob_spaces.json) and the build uses them to check values.
#pragma once

#include "halformer/schedule_revisions.hpp"
#include "halformer/schedules/cpu/attention.hpp"
#include "halformer/schedules/cpu/candidates.hpp"
#include "halformer/schedules/cpu/convert.hpp"
#include "halformer/schedules/cpu/embedding.hpp"
#include "halformer/schedules/cpu/float32.hpp"
#include "halformer/schedules/cpu/quantized.hpp"
#include "halformer/schedules/cpu/rows.hpp"
#include "halformer/schedules/cpu/sampling.hpp"
#include "halformer/schedules/gpu/attention.hpp"
#include "halformer/schedules/gpu/candidates.hpp"
#include "halformer/schedules/gpu/projections.hpp"
#include "halformer/schedules/gpu/quantized.hpp"
#include "halformer/schedules/gpu/rows.hpp"
#include "halformer/schedules/gpu/sampling.hpp"

#include <type_traits>
#include <utility>

namespace halformer::schedules {

enum class family { cpu, gpu };
inline family family_of(const Halide::Target& t) { return t.has_gpu_feature() ? family::gpu : family::cpu; }
// How int8 x int8 dot products sum (dsl::lowering::int8_form): Halide 21 emits
// vpdpbusd from unsigned x signed byte quads for its avx512_zen4 feature set
// (the avx512_vnni kernel ISA) only, and sdot from signed ones with arm_dot_prod.
inline dsl::lowering::int8_form int8_products(const Halide::Target& t) {
  using form = dsl::lowering::int8_form;
  if (family_of(t) != family::cpu)
    return form::pairs;
  if (t.has_feature(Halide::Target::AVX512_Zen4))
    return form::unsigned_quads;
  return t.arch == Halide::Target::ARM && t.has_feature(Halide::Target::ARMDotProd) ? form::signed_quads : form::pairs;
}

// Whether the int8 and bfloat16 GEMMs get an AMX form (dsl/lower_amx.hpp): Halide
// 21 emits tile instructions for its avx512_sapphirerapids feature (the amx ISA).
inline bool amx_tiles(const Halide::Target& t) {
  return family_of(t) == family::cpu && t.has_feature(Halide::Target::AVX512_SapphireRapids);
}

// A kernel's output Func and the DSL stage it holds (the top of its expression).
struct output {
  std::string stage;
  Halide::Func func;
};
using schedule_fn = void (*)(const dsl::lowering&, const std::vector<output>&, const Halide::Target&,
                             const knob_values&, const bucket_scope&);

struct section_info {
  std::vector<knob_decl> knobs;
  int revision;
  schedule_fn apply;
};

namespace detail {
inline std::vector<std::pair<std::string, Halide::Func>> stages_of(const std::vector<output>& outs) {
  std::vector<std::pair<std::string, Halide::Func>> pairs;
  for (const auto& o : outs)
    pairs.emplace_back(o.stage, o.func);
  return pairs;
}
// Calls a schedule as it is declared: CPU schedules take the target (they size
// registers and vectors by it) and a bucket scope (one knob set per shape bucket);
// GPU schedules take neither and have one knob set, so they run once, unscoped.
template <auto F, class... A>
void call(const Halide::Target& t, const knob_values& k, const bucket_scope& in, A&&... a) {
  if constexpr (std::is_invocable_v<decltype(F), A..., const Halide::Target&, const knob_values&, const bucket_scope&>)
    F(std::forward<A>(a)..., t, k, in);
  else
    F(std::forward<A>(a)..., k);
}
// schedule_fn adapters by how a schedule takes the outputs: one Func, the
// outputs' (stage, Func) pairs (the projections', kv_to_float16's), two outputs (greedy pick's and sampling's
// ids and log-probabilities; beam candidates' chunk maxima and log-probabilities).
template <auto F>
void one(const dsl::lowering& c, const std::vector<output>& o, const Halide::Target& t, const knob_values& k,
         const bucket_scope& in) {
  call<F>(t, k, in, c, o.at(0).func);
}
template <auto F>
void projections(const dsl::lowering& c, const std::vector<output>& o, const Halide::Target& t, const knob_values& k,
                 const bucket_scope& in) {
  call<F>(t, k, in, c, stages_of(o));
}
template <auto F>
void pick(const dsl::lowering& c, const std::vector<output>& o, const Halide::Target& t, const knob_values& k,
          const bucket_scope& in) {
  call<F>(t, k, in, c, o.at(0).func, o.at(1).func);
}
// The GEMM sections of a compute type, whose inputs the panel GEMMs read as I,
// under its kernels' suffix.
template <class I>
void add_gemm_sections(std::map<std::string, section_info>& sections, const std::string& suffix, int revision) {
  sections.emplace("head_projection" + suffix,
                   section_info{cpu::panel_knobs(), revision, projections<cpu::dot_product_head_projection<I>>});
  sections.emplace("out_projection" + suffix,
                   section_info{cpu::panel_knobs(), revision, one<cpu::dot_product_out_projection<I>>});
  sections.emplace("ffn" + suffix, section_info{cpu::ffn_knobs(), revision, one<cpu::dot_product_ffn<I>>});
  sections.emplace("logits" + suffix, section_info{cpu::panel_knobs(), revision, one<cpu::dot_product_logits<I>>});
}
} // namespace detail

// Knob-file sections and the schedules behind them, per family. A kernel's
// `schedule` (dsl/kernels.hpp) names its section.
inline const std::map<std::string, section_info>& sections(family f) {
  using namespace detail;
  static const auto cpu_sections = [] {
    std::map<std::string, section_info> m{
        {"embedding", {cpu::embedding_knobs(), revisions::cpu_embedding, one<cpu::embedding>}},
        {"attention", {cpu::attention_knobs(), revisions::cpu_attention, one<cpu::attention>}},
        {"attention_f16kv", {cpu::attention_knobs(), revisions::cpu_attention, one<cpu::attention>}},
        {"kv_to_float16", {cpu::convert_knobs(), revisions::cpu_convert, projections<cpu::kv_to_float16>}},
        {"layernorm", {cpu::row_knobs(), revisions::cpu_rows, one<cpu::layernorm>}},
        {"softmax", {cpu::row_knobs(), revisions::cpu_rows, one<cpu::softmax>}},
        {"greedy_pick", {cpu::candidates_knobs(), revisions::cpu_candidates, pick<cpu::greedy_pick>}},
        {"beam_candidates", {cpu::candidates_knobs(), revisions::cpu_candidates, pick<cpu::beam_candidates>}},
        {"sample_pick", {cpu::sampling_knobs(), revisions::cpu_sampling, pick<cpu::sample_pick>}}};
    add_gemm_sections<cpu::float32_inputs>(m, "", revisions::cpu_float32);
    add_gemm_sections<cpu::int8_inputs>(m, "_int8", revisions::cpu_panels);
    add_gemm_sections<cpu::bf16_inputs>(m, "_bf16", revisions::cpu_panels); // the CPU library only
    return m;
  }();
  static const std::map<std::string, section_info> gpu_sections{
      {"embedding", {gpu::embedding_knobs(), revisions::gpu_embedding, one<gpu::embedding>}},
      {"head_projection", {gpu::gemm_knobs(), revisions::gpu_gemm, projections<gpu::head_projection>}},
      {"attention", {gpu::attention_knobs(), revisions::gpu_attention, one<gpu::attention>}},
      {"out_projection", {gpu::gemm_knobs(), revisions::gpu_gemm, one<gpu::out_projection>}},
      {"ffn", {gpu::ffn_knobs(), revisions::gpu_gemm, one<gpu::ffn>}},
      {"layernorm", {gpu::row_knobs(), revisions::gpu_rows, one<gpu::layernorm>}},
      {"softmax", {gpu::row_knobs(), revisions::gpu_rows, one<gpu::softmax>}},
      {"logits", {gpu::gemm_knobs(), revisions::gpu_gemm, one<gpu::logits>}},
      {"logits_int8", {gpu::gemm_knobs(), revisions::gpu_quantized, one<gpu::quantized_logits>}},
      {"head_projection_int8",
       {gpu::gemm_knobs(), revisions::gpu_quantized, projections<gpu::quantized_head_projection>}},
      {"out_projection_int8", {gpu::gemm_knobs(), revisions::gpu_quantized, one<gpu::quantized_out_projection>}},
      {"ffn_int8", {gpu::ffn_knobs(), revisions::gpu_quantized, one<gpu::quantized_ffn>}},
      {"greedy_pick", {gpu::pick_knobs(), revisions::gpu_rows, pick<gpu::greedy_pick>}},
      {"beam_candidates", {gpu::candidates_knobs(), revisions::gpu_candidates, pick<gpu::beam_candidates>}},
      {"sample_pick", {gpu::sampling_knobs(), revisions::gpu_sampling, pick<gpu::sample_pick>}}};
  return f == family::gpu ? gpu_sections : cpu_sections;
}
inline const std::vector<knob_decl>& knobs_of(const std::string& section, const Halide::Target& t) {
  return sections(family_of(t)).at(section).knobs;
}

} // namespace halformer::schedules
