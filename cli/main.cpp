// halformer: the command line.
//   halformer run       --model DIR [--beam K] [--max-len N] [--nbest N] [--input FILE] ...  (token ids)
//   halformer translate --model MARIAN_DIR [the same options]                           (text)
//   halformer forward  --model DIR --src SRC.npy --tgt TGT.npy --out-logits OUT.npy [--out-memory MEM.npy]
//   halformer info     [--model DIR]
#include "build_lib.hpp"
#include "commands.hpp"
#include "halformer/model.hpp"
#include "halformer/npy.hpp"
#include "halformer_build_info.h"
#include "halformer_kernels.h"
#include "model_commands.hpp"
#include "tuner.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

using namespace halformer;
namespace tuner = halformer::tuner;
using namespace halformer::cli;

namespace {

std::vector<sentence> rows_of(const npy::int_array& a, const std::string& what) {
  if (a.shape.size() != 2)
    throw error(what + " must be a 2-d array [batch, length]");
  std::vector<sentence> rows(std::size_t(a.shape[0]));
  for (std::size_t b = 0; b < rows.size(); ++b)
    for (std::int64_t j = 0; j < a.shape[1]; ++j) {
      const std::int64_t v = a.data[b * a.shape[1] + j];
      if (v < 0 || v > (1ll << 30))
        throw error(fmt::format("{} [{}, {}]: token id {} is out of range", what, b, j, v));
      rows[b].push_back(int(v));
    }
  return rows;
}

int forward(const std::string& dir, const load_options& lo, const std::string& src, const std::string& tgt,
            const std::string& out_logits, const std::string& out_memory) {
  Model model = Model::load(dir, lo);
  for (const auto& w : model.warnings())
    fmt::print(stderr, "halformer: warning: {}\n", w);
  const auto s = rows_of(npy::read_ints(src), "--src " + src), t = rows_of(npy::read_ints(tgt), "--tgt " + tgt);
  std::vector<float> logits, memory;
  model.forward(s, t, logits, out_memory.empty() ? nullptr : &memory);
  const auto& c = model.config();
  npy::write_f32(out_logits, {std::int64_t(t.size()), std::int64_t(t[0].size()), c.tgt_vocab}, logits);
  if (!out_memory.empty())
    npy::write_f32(out_memory, {std::int64_t(s.size()), std::int64_t(s[0].size()), c.d_model}, memory);
  return 0;
}

// Every command's options, filled in by CLI11.
struct options {
  model_request m; // run, translate; forward and info use its directory and load options
  std::string src, tgt, out_logits, out_memory;
  tuner::tune_options to;
  cli::tune_request tr;
  tuner::build_lib_options bo;
  std::string lib_targets = "x86", lib_kernels, lib_emit;
  tuner::compare_options co;
  std::string cmp_schedules, cmp_out = "compare-results", cmp_preset, cmp_compute = "float32";
  bool cmp_all = false;
};

// The options of every command that decodes: run and translate.
void add_kv_cache(CLI::App* cmd, load_options& lo) {
  cmd->add_option("--kv-cache", lo.kv_cache,
                  "the decoder's attention keys and values: float32, float16 (CPU), or auto (float16 with int8 or "
                  "bfloat16 GEMMs on the CPU)")
      ->check(CLI::IsMember({"float32", "float16", "auto"}));
}

void add_decoding(CLI::App* cmd, model_request& m) {
  cmd->add_option("--model", m.dir, "model directory (halformer's format or a MarianMT directory)")->required();
  cmd->add_option("--beam", m.o.beam, "beam size (1: greedy)")->check(CLI::Range(1, 64));
  cmd->add_option("--max-len", m.o.max_len,
                  "maximum new tokens per sentence (default: 128, or the model's last position)")
      ->check(CLI::Range(1, 100000))
      ->each([&m](const std::string&) { m.max_len_given = true; });
  cmd->add_option("--max-source-len", m.lo.max_source_length, "longer sources are an error")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--nbest", m.o.nbest, "hypotheses per input (> 1: 'line ||| result ||| score' lines)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--length-penalty", m.o.length_penalty, "beam scores are log P / length^this")
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_option("--input", m.input, "input file (default: stdin)");
  cmd->add_option("--output", m.output, "output file (default: stdout)");
  cmd->add_option("--batch", m.batch, "sentences decoded together")->check(CLI::Range(1, 4096));
  cmd->add_option("--threads", m.lo.threads, "threads (default: all cores)")->check(CLI::Range(1, 1024));
  cmd->add_option("--device", m.lo.device, "cpu, cuda, opencl, or auto (CUDA, else an OpenCL GPU, else CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "opencl", "auto"}));
  cmd->add_option("--compute-type", m.lo.compute_type,
                  "GEMMs in float32, int8 (weights quantized at load), bfloat16, or auto (int8 on the CPU)")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  add_kv_cache(cmd, m.lo);
  cmd->add_flag("--profile", m.profile, "print each kernel's time per phase and the host's work to stderr");
}

CLI::App* add_run(CLI::App& app, options& p) {
  auto* cmd = app.add_subcommand("run", "translate token-id lines (stdin or --input) into token-id lines");
  add_decoding(cmd, p.m);
  return cmd;
}

CLI::App* add_translate(CLI::App& app, options& p) {
  auto* cmd = app.add_subcommand("translate", "translate text lines with a MarianMT directory's tokenizer "
                                              "(SentencePiece + vocab.json); empty lines stay empty");
  add_decoding(cmd, p.m);
  p.m.progress = true; // on stderr, when it is a terminal
  return cmd;
}

CLI::App* add_forward(CLI::App& app, options& p) {
  auto [lo, dir, src, tgt, out_logits, out_memory] =
      std::tie(p.m.lo, p.m.dir, p.src, p.tgt, p.out_logits, p.out_memory);
  auto* fwd = app.add_subcommand("forward", "teacher-forced forward pass on .npy token arrays");
  fwd->add_option("--model", dir, "model directory")->required();
  fwd->add_option("--src", src, "source ids, int64 [batch, src_len], padded with pad_id")->required();
  fwd->add_option("--tgt", tgt, "target ids, int64 [batch, tgt_len]")->required();
  fwd->add_option("--out-logits", out_logits, "float32 [batch, tgt_len, tgt_vocab]")->required();
  fwd->add_option("--out-memory", out_memory, "float32 [batch, src_len, d_model]");
  fwd->add_option("--threads", lo.threads, "threads (default: all cores)")->check(CLI::Range(1, 1024));
  fwd->add_option("--device", lo.device, "cpu, cuda, opencl or auto")
      ->check(CLI::IsMember({"cpu", "cuda", "opencl", "auto"}));
  fwd->add_option("--compute-type", lo.compute_type,
                  "GEMMs in float32, int8 (weights quantized at load), bfloat16, or auto (int8 on the CPU)")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  add_kv_cache(fwd, lo);
  return fwd;
}

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

CLI::App* add_tune(CLI::App& app, options& p) {
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

CLI::App* add_build_lib(CLI::App& app, options& p) {
  auto [bo, lib_targets, lib_kernels, lib_emit] = std::tie(p.bo, p.lib_targets, p.lib_kernels, p.lib_emit);
  auto* lib_cmd = app.add_subcommand("build-lib", "write a static kernel library (.a + C headers) for Halide targets");
  lib_cmd->add_option("--target", lib_targets,
                      "x86 (AVX-512, AVX2, SSE4.1 with dispatch), cuda (PTX for sm_86, sm_80, sm_70 with "
                      "dispatch), opencl, or Halide target strings, comma-separated, most specialised first");
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

CLI::App* add_compare(CLI::App& app, options& p) {
  auto [co, cmp_schedules, cmp_out, cmp_preset, cmp_all] =
      std::tie(p.co, p.cmp_schedules, p.cmp_out, p.cmp_preset, p.cmp_all);
  co.measure.isa = "";
  co.db_dir = build_info::default_db;
  auto* cmp_cmd =
      app.add_subcommand("compare", "benchmark schedules side by side: default, tuned, autoschedulers, BLAS, oneDNN");
  auto* cmp_kernel = cmp_cmd->add_option("--kernel", co.kernel, "kernel");
  cmp_cmd->add_option("--shape", co.shape, "shape, as for tune");
  cmp_cmd->add_option("--schedules", cmp_schedules,
                      "default,tuned,adams2019,mullapudi2016,li2018,blas,onednn,opencl,opencl-tuned (default: the CPU "
                      "ones; blas: OpenBLAS sgemm or oneDNN's int8 GEMM, onednn: oneDNN's matmul of the kernel's "
                      "type; opencl: the GPU schedule on the OpenCL device)");
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

int build_lib(options& p) {
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

int main(int argc, char** argv) {
  CLI::App app{"halformer: Transformer encoder-decoder inference on Halide kernels"};
  app.require_subcommand(1);
  options p;
  auto* run_cmd = add_run(app, p);
  auto* translate_cmd = add_translate(app, p);
  auto* fwd = add_forward(app, p);
  auto* tune_cmd = add_tune(app, p);
  auto* lib_cmd = add_build_lib(app, p);
  auto* cmp_cmd = add_compare(app, p);
  auto* info = app.add_subcommand("info", "CPU features, kernel ISA, schedules, Halide version");
  info->add_option("--model", p.m.dir, "also describe this model");
  info->add_option("--compute-type", p.m.lo.compute_type, "describe the model's kernels in this compute type")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  add_kv_cache(info, p.m.lo);

  CLI11_PARSE(app, argc, argv);
  try {
    model_request& m = p.m;
    if (m.o.nbest > m.o.beam)
      throw error(fmt::format("--nbest {} exceeds --beam {}", m.o.nbest, m.o.beam));
    m.lo.max_batch = std::max(m.batch * m.o.beam, 1);
    m.lo.max_target_length = std::max(m.o.max_len, 1);
    if (*run_cmd)
      return run(m);
    if (*translate_cmd)
      return translate(m);
    if (*fwd)
      return forward(m.dir, m.lo, p.src, p.tgt, p.out_logits, p.out_memory);
    if (*tune_cmd)
      return tune(p.tr, p.to);
    if (*cmp_cmd)
      return compare(p.co, p.cmp_schedules, p.cmp_out, p.cmp_all,
                     p.cmp_preset.empty() ? "transformer-base" : p.cmp_preset, p.cmp_compute);
    if (*lib_cmd)
      return build_lib(p);
    if (*info)
      print_info(m.dir, m.lo);
  } catch (const std::exception& e) {
    fmt::print(stderr, "halformer: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
