// halformer: the command line.
//   halformer run      --model DIR [--beam K] [--max-len N] [--nbest N] [--input FILE] ...
//   halformer forward  --model DIR --src SRC.npy --tgt TGT.npy --out-logits OUT.npy [--out-memory MEM.npy]
//   halformer info     [--model DIR]
#include "../src/npy.hpp"
#include "build_lib.hpp"
#include "commands.hpp"
#include "halformer/model.hpp"
#include "halformer_build_info.h"
#include "halformer_kernels.h"
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

// One line of space-separated token ids; `line_no` names the line in errors.
sentence parse_line(const std::string& line, std::size_t line_no) {
  std::istringstream in(line);
  sentence s;
  std::string word;
  while (in >> word) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v > (1ll << 30))
      throw error(fmt::format("input line {}: '{}' is not a token id", line_no, word));
    s.push_back(int(v));
  }
  if (s.empty())
    throw error(fmt::format("input line {} is empty", line_no));
  return s;
}

std::string join(const sentence& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? " " : "") + std::to_string(s[i]);
  return out;
}

int run(const std::string& dir, const load_options& lo, const decode_options& o, const std::string& input, int batch,
        bool profile) {
  Model model = Model::load(dir, lo);
  for (const auto& w : model.warnings())
    fmt::print(stderr, "halformer: warning: {}\n", w);
  model.set_profiling(profile);
  std::ifstream file;
  if (!input.empty()) {
    file.open(input);
    if (!file)
      throw error("cannot open input '" + input + "'");
  }
  std::istream& in = input.empty() ? std::cin : file;
  std::string line;
  std::size_t line_no = 0;
  bool more = true;
  while (more) {
    std::vector<sentence> chunk;
    while (int(chunk.size()) < batch && (more = bool(std::getline(in, line)))) {
      chunk.push_back(parse_line(line, ++line_no));
      const auto& c = model.config();
      if (int(chunk.back().size()) > lo.max_source_length)
        throw error(fmt::format("input line {} has {} tokens, more than the maximum {} (--max-source-len)", line_no,
                                chunk.back().size(), lo.max_source_length));
      for (int id : chunk.back())
        if (id >= c.src_vocab)
          throw error(fmt::format("input line {}: token id {} is outside the source vocabulary [0, {})", line_no, id,
                                  c.src_vocab));
    }
    if (chunk.empty())
      break;
    const std::size_t first_line = line_no - chunk.size() + 1;
    // Print in input order, each sentence as soon as it and all before it are done.
    std::vector<std::vector<hypothesis>> ready(chunk.size());
    std::vector<char> is_ready(chunk.size(), 0);
    std::size_t next = 0;
    auto flush = [&] {
      for (; next < chunk.size() && is_ready[next]; ++next) {
        if (o.nbest == 1)
          fmt::print("{}\n", join(ready[next][0].tokens));
        else
          for (const auto& h : ready[next])
            fmt::print("{} ||| {} ||| {:.6f}\n", first_line + next - 1, join(h.tokens), h.score);
      }
      std::fflush(stdout);
    };
    try {
      model.translate(chunk, o, [&](std::size_t i, const std::vector<hypothesis>& h) {
        ready[i] = h;
        is_ready[i] = 1;
        flush();
      });
    } catch (const error& e) {
      throw error(fmt::format("input lines {}-{}: {}", first_line, line_no, e.what()));
    }
  }
  if (profile)
    fmt::print(stderr, "profile (kernel ISA {}):\n{}", halformer_active_isa(), model.profile().table());
  return 0;
}

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
  load_options lo;
  decode_options o;
  std::string dir, input, src, tgt, out_logits, out_memory;
  int batch = 32;
  bool profile = false;
  tuner::tune_options to;
  cli::tune_request tr;
  tuner::build_lib_options bo;
  std::string lib_targets = "x86", lib_kernels, lib_emit;
  tuner::compare_options co;
  std::string cmp_schedules, cmp_out = "compare-results", cmp_preset, cmp_compute = "float32";
  bool cmp_all = false;
};

CLI::App* add_run(CLI::App& app, options& p) {
  auto [lo, o, dir, input, batch] = std::tie(p.lo, p.o, p.dir, p.input, p.batch);
  auto* run_cmd = app.add_subcommand("run", "translate token-id lines (stdin or --input) into token-id lines");
  run_cmd->add_option("--model", dir, "model directory (config.json + model.safetensors)")->required();
  run_cmd->add_option("--beam", o.beam, "beam size (1: greedy)")->check(CLI::Range(1, 64));
  run_cmd->add_option("--max-len", o.max_len, "maximum new tokens per sentence")->check(CLI::Range(1, 100000));
  run_cmd->add_option("--max-source-len", lo.max_source_length, "longer source lines are an error")
      ->check(CLI::Range(1, 1 << 20));
  run_cmd->add_option("--nbest", o.nbest, "hypotheses per input (> 1: 'line ||| ids ||| score' lines)")
      ->check(CLI::Range(1, 64));
  run_cmd->add_option("--length-penalty", o.length_penalty, "beam scores are log P / length^this")
      ->check(CLI::Range(0.0, 10.0));
  run_cmd->add_option("--input", input, "input file (default: stdin)");
  run_cmd->add_option("--batch", batch, "sentences decoded together")->check(CLI::Range(1, 4096));
  run_cmd->add_option("--threads", lo.threads, "threads (default: all cores)")->check(CLI::Range(1, 1024));
  run_cmd->add_option("--device", lo.device, "cpu, cuda, opencl, or auto (CUDA, else an OpenCL GPU, else CPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "opencl", "auto"}));
  run_cmd
      ->add_option("--compute-type", lo.compute_type,
                   "GEMMs in float32, int8 (weights quantized at load), bfloat16, or auto (int8 on the CPU)")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  run_cmd->add_flag("--profile", p.profile, "print each kernel's time per phase and the host's work to stderr");

  return run_cmd;
}

CLI::App* add_forward(CLI::App& app, options& p) {
  auto [lo, dir, src, tgt, out_logits, out_memory] = std::tie(p.lo, p.dir, p.src, p.tgt, p.out_logits, p.out_memory);
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

  return fwd;
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
  tune_cmd->add_option("--model", tr.model_dir, "tune every kernel at the shapes of this model directory")
      ->excludes(kernel_opt)
      ->excludes(preset_opt)
      ->check(CLI::ExistingDirectory);
  tune_cmd->add_option("--prefill-tokens", tr.prefill_tokens, "a model's prefill length (and decode keys)")
      ->check(CLI::Range(2, 1 << 16));
  tune_cmd->add_option("--compute-type", tr.compute_type, "a preset's or model's GEMMs: float32, or int8 (*_int8)")
      ->check(CLI::IsMember({"float32", "int8"}));
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
                   "wall time of the whole run, shared evenly by its kernel/shape pairs: 15m")
      ->excludes(budget_opt);
  tune_cmd
      ->add_option("--trials", to.max_trials,
                   "at most this many new candidates per kernel and shape (0: only re-confirm the finalists)")
      ->check(CLI::Range(0, 1000000));
  tune_cmd->add_option("--db", tr.db_dir, "schedule database directory");
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
      ->add_option("--confirm-rounds", to.confirm_rounds,
                   "harness runs per finalist in the confirmation round (0: none)")
      ->check(CLI::Range(0, 100));

  return tune_cmd;
}

CLI::App* add_build_lib(CLI::App& app, options& p) {
  auto [bo, lib_targets, lib_kernels, lib_emit] = std::tie(p.bo, p.lib_targets, p.lib_kernels, p.lib_emit);
  auto* lib_cmd = app.add_subcommand("build-lib", "write a static kernel library (.a + C headers) for Halide targets");
  lib_cmd->add_option("--target", lib_targets,
                      "x86 (AVX-512, AVX2, SSE4.1 with dispatch), cuda (PTX for sm_86, sm_80, sm_70 with "
                      "dispatch), opencl, or Halide target strings, comma-separated, most specialised first");
  lib_cmd->add_option("--out", bo.out_dir, "output directory")->required();
  lib_cmd->add_option("--knob-file", bo.knob_file,
                      "knob file of the CPU kernels (default: the one this build chose; its line in the build log "
                      "says which)");
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
      app.add_subcommand("compare", "benchmark schedules side by side: default, tuned, autoschedulers, BLAS");
  auto* cmp_kernel = cmp_cmd->add_option("--kernel", co.kernel, "kernel");
  cmp_cmd->add_option("--shape", co.shape, "shape, as for tune");
  cmp_cmd->add_option("--schedules", cmp_schedules,
                      "default,tuned,adams2019,mullapudi2016,li2018,blas,opencl,opencl-tuned (default: the CPU ones; "
                      "opencl: the GPU schedule on the OpenCL device)");
  cmp_cmd->add_flag("--all", cmp_all, "every kernel at the preset's shapes, then a summary")->excludes(cmp_kernel);
  cmp_cmd->add_option("--preset", cmp_preset, "shapes for --all (default transformer-base)");
  cmp_cmd->add_option("--compute-type", p.cmp_compute, "--all's GEMMs: float32, or int8 (*_int8 kernels)")
      ->check(CLI::IsMember({"float32", "int8"}));
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
  auto* fwd = add_forward(app, p);
  auto* tune_cmd = add_tune(app, p);
  auto* lib_cmd = add_build_lib(app, p);
  auto* cmp_cmd = add_compare(app, p);
  auto* info = app.add_subcommand("info", "CPU features, kernel ISA, schedules, Halide version");
  info->add_option("--model", p.dir, "also describe this model");
  info->add_option("--compute-type", p.lo.compute_type, "describe the model's kernels in this compute type")
      ->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));

  CLI11_PARSE(app, argc, argv);
  try {
    if (p.o.nbest > p.o.beam)
      throw error(fmt::format("--nbest {} exceeds --beam {}", p.o.nbest, p.o.beam));
    p.lo.max_batch = std::max(p.batch * p.o.beam, 1);
    p.lo.max_target_length = std::max(p.o.max_len, 1);
    if (*run_cmd)
      return run(p.dir, p.lo, p.o, p.input, p.batch, p.profile);
    if (*fwd)
      return forward(p.dir, p.lo, p.src, p.tgt, p.out_logits, p.out_memory);
    if (*tune_cmd)
      return tune(p.tr, p.to);
    if (*cmp_cmd)
      return compare(p.co, p.cmp_schedules, p.cmp_out, p.cmp_all,
                     p.cmp_preset.empty() ? "transformer-base" : p.cmp_preset, p.cmp_compute);
    if (*lib_cmd)
      return build_lib(p);
    if (*info)
      print_info(p.dir, p.lo);
  } catch (const std::exception& e) {
    fmt::print(stderr, "halformer: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
