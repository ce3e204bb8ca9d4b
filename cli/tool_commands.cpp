// The commands that drive the build's tools: tune, build-lib, compare (tuner/)
// and info.
#include "tool_commands.hpp"

#include "build_lib.hpp"
#include "commands.hpp"
#include "halformer_build_info.h"
#include "tuner.hpp"

#include <fmt/core.h>

#include <sstream>

namespace halformer::cli {

namespace tuner = halformer::tuner;

namespace {

struct tool_options {
  model_request& m; // info describes its directory with its load options
  tuner::tune_options to;
  cli::tune_request tr;
  tuner::build_lib_options bo;
  std::string lib_targets = "x86", lib_kernels, lib_emit;
  tuner::compare_options co;
  std::string cmp_schedules, cmp_out = "compare-results", cmp_preset, cmp_compute = "float32";
  bool cmp_all = false;
};

// How `tune` measures: the ISA, threads, samples, time-outs and the confirmation round.
void add_measuring(CLI::App* tune_cmd, tuner::tune_options& to) {
  tune_cmd->add_option("--isa", to.isa,
                       "avx512, avx2, sse41 (default: this CPU's best), or opencl (the GPU schedules, measured on "
                       "the OpenCL device)");
  tune_cmd->add_option("--threads", to.threads, "threads while measuring (default: all cores)")
      ->check(CLI::Range(1, 1024));
  tune_cmd->add_option("--samples", to.samples, "timing samples per candidate")->check(CLI::Range(1, 1000));
  tune_cmd->add_option("--min-ms", to.min_sample_ms, "minimum time per sample")->check(CLI::Range(0.1, 10000.0));
  tune_cmd->add_option("--timeout", to.candidate_timeout_s, "seconds per candidate step")
      ->check(CLI::Range(1.0, 3600.0));
  tune_cmd->add_option("--seed", to.seed, "search seed");
  tune_cmd->add_option("--finalists", to.finalists, "best candidates re-measured with the default at the end")
      ->check(CLI::Range(0, 100));
  tune_cmd
      ->add_option("--adopt-margin", to.adopt_margin,
                   "a confirmed winner replaces the hand default only when faster by more than this fraction, or "
                   "than the default's own runs spread where that is larger (default 0.03)")
      ->check(CLI::Range(0.0, 0.5));
  tune_cmd
      ->add_option("--confirm-rounds", to.confirm_rounds,
                   "harness runs per finalist in the confirmation round (0: none)")
      ->check(CLI::Range(0, 100));
}

CLI::App* add_tune(CLI::App& app, tool_options& p) {
  auto [to, tr] = std::tie(p.to, p.tr);
  to.isa = ""; // this CPU's best unless --isa
  tr.db_dir = build_info::default_db;
  auto* tune_cmd = app.add_subcommand("tune", "search schedule knobs for this machine, measuring every candidate");
  auto* kernel_opt = tune_cmd->add_option("--kernel", tr.kernel, "kernel to tune (e.g. attention, ffn_relu)");
  tune_cmd->add_option("--shape", to.shape, "shape, e.g. d_k=64,heads=8,t=1,tk=128,batch=8,causal=1");
  auto* preset_opt =
      tune_cmd->add_option("--preset", tr.preset, "tune every kernel at a preset's shapes (transformer-base)")
          ->excludes(kernel_opt);
  auto* model_opt =
      tune_cmd->add_option("--model", tr.model_dir, "tune every kernel at the shapes of this model directory")
          ->excludes(kernel_opt)
          ->excludes(preset_opt)
          ->check(CLI::ExistingDirectory);
  tune_cmd->add_option("--prefill-tokens", tr.prefill_tokens, "a model's prefill length (and decode keys)")
      ->check(CLI::Range(2, 1 << 16));
  tune_cmd
      ->add_option("--compute-type", tr.compute_type,
                   "a preset's or model's GEMMs: float32, int8 (*_int8) or bfloat16 (*_bf16)")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16"}));
  tune_cmd->add_option("--batch", tr.batch, "a model's batch (decode is also tuned at batch 1)")
      ->check(CLI::Range(2, 1 << 16));
  tune_cmd->add_option("--knob-file", tr.knob_file,
                       "write the knob file here (default: this hardware's in schedules/knobs/tuned, which the "
                       "build uses)");
  auto* budget_opt = tune_cmd->add_option(
      "--budget", tr.budget,
      "wall time per kernel and shape, compiles and confirmation included: 90s, 5m, 1h (default 5m)");
  tune_cmd
      ->add_option("--total-budget", tr.total_budget,
                   "wall time of the whole run, divided by each kernel's share of a model's run: 15m")
      ->excludes(budget_opt);
  tune_cmd
      ->add_option("--trials", to.max_trials,
                   "at most this many new candidates per kernel and shape (0: only re-confirm the finalists)")
      ->check(CLI::Range(0, 1000000));
  tune_cmd->add_option("--db", tr.db_dir, "schedule database directory");
  tune_cmd
      ->add_flag("--prune-retired", tr.prune_retired,
                 "tune nothing: drop the database's records measured with earlier revisions of their schedule")
      ->excludes(kernel_opt)
      ->excludes(preset_opt)
      ->excludes(model_opt);
  add_measuring(tune_cmd, to);
  return tune_cmd;
}

CLI::App* add_build_lib(CLI::App& app, tool_options& p) {
  auto [bo, lib_targets, lib_kernels, lib_emit] = std::tie(p.bo, p.lib_targets, p.lib_kernels, p.lib_emit);
  auto* lib_cmd = app.add_subcommand("build-lib", "write a static kernel library (.a + C headers) for Halide targets");
  lib_cmd->add_option("--target", lib_targets,
                      "x86 (AVX-512, AVX2, SSE4.1 with dispatch), arm64 (AArch64: NEON, and sdot for the int8 GEMMs, "
                      "with dispatch), cuda (PTX for sm_86, sm_80, sm_70 with dispatch), opencl, or Halide target "
                      "strings, comma-separated, most specialised first");
  lib_cmd->add_option("--out", bo.out_dir, "output directory")->required();
  lib_cmd
      ->add_option("--knobs", bo.knobs,
                   "knobs of the CPU kernels, as HALFORMER_KNOBS: host (this machine's tuned knobs), defaults "
                   "(the hand defaults) or a knob file")
      ->capture_default_str();
  lib_cmd->add_option("--kernels", lib_kernels, "comma-separated kernels (default: all)");
  lib_cmd->add_option("--emit", lib_emit, "extra outputs per kernel: stmt, assembly, ...");

  return lib_cmd;
}

CLI::App* add_compare(CLI::App& app, tool_options& p) {
  auto [co, cmp_schedules, cmp_out, cmp_preset, cmp_all] =
      std::tie(p.co, p.cmp_schedules, p.cmp_out, p.cmp_preset, p.cmp_all);
  co.measure.isa = "";
  co.db_dir = build_info::default_db;
  auto* cmp_cmd =
      app.add_subcommand("compare", "benchmark schedules side by side: default, tuned, autoschedulers, BLAS, oneDNN");
  auto* cmp_kernel = cmp_cmd->add_option("--kernel", co.kernel, "kernel");
  cmp_cmd->add_option("--shape", co.shape, "shape, as for tune");
  cmp_cmd->add_option("--schedules", cmp_schedules,
                      "default,tuned,adams2019,mullapudi2016,li2018,blas,onednn,onednn-fused,opencl,opencl-tuned "
                      "(default: the CPU ones; blas: OpenBLAS sgemm or oneDNN's int8 GEMM, onednn: oneDNN's matmul of "
                      "the kernel's type, onednn-fused: the same with the kernel's epilogue (bias, activation, "
                      "residual); opencl: the GPU schedule on the OpenCL device)");
  cmp_cmd->add_flag("--all", cmp_all, "every kernel at the preset's shapes, then a summary")->excludes(cmp_kernel);
  cmp_cmd->add_option("--preset", cmp_preset, "shapes for --all (default transformer-base)");
  cmp_cmd
      ->add_option("--compute-type", p.cmp_compute,
                   "--all's GEMMs: float32, int8 (*_int8 kernels) or bfloat16 (*_bf16)")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16"}));
  cmp_cmd->add_option("--db", co.db_dir, "schedule database (tuned rows)");
  cmp_cmd->add_option("--out", cmp_out, "directory for CSV, JSON and SVG reports");
  cmp_cmd->add_option("--isa", co.measure.isa, "avx512, avx2 or sse41");
  cmp_cmd->add_option("--threads", co.measure.threads, "threads (default: all cores)")->check(CLI::Range(1, 1024));
  cmp_cmd->add_option("--samples", co.measure.samples, "timing samples")->check(CLI::Range(1, 1000));
  cmp_cmd->add_option("--min-ms", co.measure.min_sample_ms, "minimum time per sample")->check(CLI::Range(0.1, 10000.0));
  cmp_cmd->add_option("--rounds", co.rounds, "harness runs per schedule, taken in turn (median of their medians)")
      ->check(CLI::Range(1, 100));

  return cmp_cmd;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> v;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty())
      v.push_back(item);
  return v;
}

int build_lib(tool_options& p) {
  const std::string share = build_info::share_dir;
  // A comma inside "x86,..." lists targets; Halide target strings use '-' only.
  p.bo.targets = split_commas(p.lib_targets), p.bo.kernels = split_commas(p.lib_kernels);
  p.bo.emit = split_commas(p.lib_emit);
  fmt::print("{}\n", tuner::build_lib(
                         tuner::toolchain::from_json_file(share + "/tuner_paths.json"),
                         tuner::catalog::from_json_files(share + "/kernels.json", share + "/knob_spaces.json"), p.bo));
  return 0;
}

} // namespace

struct tool_commands::state {
  tool_options p;
  CLI::App *tune = nullptr, *lib = nullptr, *cmp = nullptr, *info = nullptr;
};

tool_commands::tool_commands(CLI::App& app, model_request& m) : s_(new state{tool_options{m}}) {
  tool_options& p = s_->p;
  s_->tune = add_tune(app, p);
  s_->lib = add_build_lib(app, p);
  s_->cmp = add_compare(app, p);
  s_->info = app.add_subcommand("info", "CPU features, kernel ISA, schedules, Halide version");
  s_->info->add_option("--model", p.m.dir, "also describe this model");
  s_->info->add_option("--compute-type", p.m.lo.compute_type, "describe the model's kernels in this compute type")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  add_kv_cache(s_->info, p.m.lo);
}

tool_commands::~tool_commands() = default;

std::optional<int> tool_commands::run_chosen() {
  tool_options& p = s_->p;
  if (*s_->tune)
    return tune(p.tr, p.to);
  if (*s_->cmp)
    return compare(p.co, p.cmp_schedules, p.cmp_out, p.cmp_all,
                   p.cmp_preset.empty() ? "transformer-base" : p.cmp_preset, p.cmp_compute);
  if (*s_->lib)
    return build_lib(p);
  if (*s_->info) {
    print_info(p.m.dir, p.m.lo);
    return 0;
  }
  return std::nullopt;
}

} // namespace halformer::cli
