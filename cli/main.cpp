// halformer: the command line.
//   halformer run       --model DIR [--beam K] [--max-len N] [--nbest N] [--input FILE] ...  (token ids)
//   halformer translate --model MARIAN_DIR [the same options]                           (text)
//   halformer forward  --model DIR --src SRC.npy --tgt TGT.npy --out-logits OUT.npy [--out-memory MEM.npy]
//   halformer info     [--model DIR]
#include "halformer/model.hpp"
#include "halformer/npy.hpp"
#include "model_commands.hpp"
#if HALFORMER_CLI_TOOLS
#include "tool_commands.hpp"
#endif

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

using namespace halformer;
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

// The model commands' options, filled in by CLI11.
struct options {
  model_request m; // run, translate; forward uses its directory and load options
  std::string src, tgt, out_logits, out_memory;
};

// The options of every command that decodes: run and translate.
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

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"halformer: Transformer encoder-decoder inference on Halide kernels"};
  app.require_subcommand(1);
  options p;
  auto* run_cmd = add_run(app, p);
  auto* translate_cmd = add_translate(app, p);
  auto* fwd = add_forward(app, p);
#if HALFORMER_CLI_TOOLS
  tool_commands tools(app, p.m);
#endif

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
#if HALFORMER_CLI_TOOLS
    if (auto rc = tools.run_chosen())
      return *rc;
#endif
  } catch (const std::exception& e) {
    fmt::print(stderr, "halformer: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
