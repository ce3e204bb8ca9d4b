// `run` (token ids) and `translate` (text): lines in, results out in input order.
#include "model_commands.hpp"

#include "halformer/tokenizer.hpp"
#include "halformer_kernels.h"
#include "line_translation.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <unistd.h>

namespace halformer::cli {

namespace {
// One line of space-separated token ids (`what` and `line_no` name it in errors).
sentence parse_ids(const std::string& line, std::size_t line_no, const char* what = "input") {
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
      throw error(fmt::format("{} line {}: '{}' is not a token id", what, line_no, word));
    s.push_back(int(v));
  }
  return s;
}

// --target-prefix: its lines, one per input line, each made a prefix by `parse`
// (line text, line number); an input line without a prefix line is an error.
std::function<sentence(std::size_t)> prefix_lines(const std::string& path,
                                                  std::function<sentence(const std::string&, std::size_t)> parse) {
  if (path.empty())
    return nullptr;
  std::ifstream file(path);
  if (!file)
    throw error("cannot open --target-prefix '" + path + "'");
  auto lines = std::make_shared<std::vector<std::string>>();
  for (std::string line; std::getline(file, line);)
    lines->push_back(line);
  return [lines, path, parse](std::size_t n) {
    if (n > lines->size())
      throw error(fmt::format("--target-prefix '{}' has {} lines: none for input line {}", path, lines->size(), n));
    return parse((*lines)[n - 1], n);
  };
}

std::string join(const sentence& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? " " : "") + std::to_string(s[i]);
  return out;
}

Model load_model(model_request& r) {
  Model model = Model::load(r.dir, r.lo);
  for (const auto& w : model.warnings())
    fmt::print(stderr, "halformer: warning: {}\n", w);
  model.set_profiling(r.profile);
  if (!r.max_len_given && model.config().max_positions > 0)
    r.o.max_len = std::min(r.o.max_len, model.config().max_positions);
  model.check_options(r.o, 0); // a bad option fails before any input is read (prefixes come per batch)
  return model;
}

// Runs `lines` over --input (or stdin) into --output (or stdout).
void stream(Model& model, const model_request& r, const line_source& lines) {
  std::ifstream file;
  if (!r.input.empty()) {
    file.open(r.input);
    if (!file)
      throw error("cannot open input '" + r.input + "'");
  }
  if (!r.output.empty() && !std::freopen(r.output.c_str(), "w", stdout))
    throw error("cannot write output '" + r.output + "'");
  translate_lines(model, r.o, r.input.empty() ? std::cin : file, r.batch, lines, r.progress && isatty(2));
  if (r.profile)
    fmt::print(stderr, "profile (kernel ISA {}):\n{}", halformer_active_isa(), model.profile().table());
}
} // namespace

int run(model_request r) {
  Model model = load_model(r);
  const model_config& c = model.config();
  line_source lines;
  lines.parse = [&](const std::string& line, std::size_t n) -> std::optional<sentence> {
    sentence s = parse_ids(line, n);
    if (s.empty())
      throw error(fmt::format("input line {} is empty", n));
    if (int(s.size()) > r.lo.max_source_length)
      throw error(fmt::format("input line {} has {} tokens, more than the maximum {} (--max-source-len)", n, s.size(),
                              r.lo.max_source_length));
    for (int id : s)
      if (id >= c.src_vocab)
        throw error(
            fmt::format("input line {}: token id {} is outside the source vocabulary [0, {})", n, id, c.src_vocab));
    return s;
  };
  lines.print = [&](std::size_t n, const std::vector<hypothesis>& hyps) {
    if (r.o.nbest == 1)
      fmt::print("{}\n", join(hyps[0].tokens));
    else
      for (const auto& h : hyps)
        fmt::print("{} ||| {} ||| {:.6f}\n", n - 1, join(h.tokens), h.score);
  };
  lines.prefix = prefix_lines(
      r.target_prefix, [](const std::string& line, std::size_t n) { return parse_ids(line, n, "--target-prefix"); });
  stream(model, r, lines);
  return 0;
}

int translate(model_request r) {
  const Tokenizer tokenizer = Tokenizer::load(r.dir);
  Model model = load_model(r);
  r.o.forced_bos_id = tokenizer.forced_bos_id(r.target_lang, model.config().forced_bos_id);
  tokenizer.encode("", r.source_lang); // a missing or unknown code before any input is read
  line_source lines;
  lines.parse = [&](const std::string& line, std::size_t n) -> std::optional<sentence> {
    if (line.empty())
      return std::nullopt;
    try {
      return tokenizer.encode(line, r.source_lang);
    } catch (const error& e) {
      throw error(fmt::format("input line {}: {}", n, e.what()));
    }
  };
  lines.print = [&](std::size_t n, const std::vector<hypothesis>& hyps) {
    if (hyps.empty()) { // an empty line
      if (r.o.nbest == 1)
        fmt::print("\n");
      else
        fmt::print("{} |||  ||| 0\n", n - 1);
      return;
    }
    if (r.o.nbest == 1)
      fmt::print("{}\n", tokenizer.decode(hyps[0].tokens));
    else
      for (const auto& h : hyps)
        fmt::print("{} ||| {} ||| {:.6f}\n", n - 1, tokenizer.decode(h.tokens), h.score);
  };
  lines.prefix = prefix_lines(r.target_prefix, [&](const std::string& line, std::size_t n) {
    try {
      return tokenizer.encode_target_prefix(line);
    } catch (const error& e) {
      throw error(fmt::format("--target-prefix line {}: {}", n, e.what()));
    }
  });
  stream(model, r, lines);
  return 0;
}

void add_kv_cache(CLI::App* cmd, load_options& lo) {
  cmd->add_option("--kv-cache", lo.kv_cache,
                  "the decoder's attention keys and values: float32, float16 (CPU), or auto (float16 with int8 or "
                  "bfloat16 GEMMs on the CPU)")
      ->check(CLI::IsMember({"float32", "float16", "auto"}));
}

} // namespace halformer::cli
