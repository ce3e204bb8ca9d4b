// halformer end to end through its C++ API, one case per process (so that peak
// RSS is the case's): encode a batch, or translate it greedily or with beam
// search, or sample it (top-k 10 or --sampling-topk, seed 1, EOS banned before the last token,
// as ct2_bench.py's sample mode). Prints JSON: median/min/max seconds per batch, tokens per second
// (encode: source tokens; decode: generated tokens), peak RSS, and the first
// sample's tokens (to compare outputs across runtimes).
//   bench_e2e --model DIR --sources FILE --mode encode|greedy|beam|sample --batch B
//             [--beam K] [--new-tokens N] [--threads T] [--samples S] [--device D] [--sampling-topk K]
#include "halformer/model.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {
struct options {
  std::string model_dir, sources_file, mode = "greedy", device = "cpu", compute_type = "float32", kv_cache = "auto";
  int batch = 1, beam = 4, new_tokens = 64, threads = 0, samples = 3;
  int sampling_topk = 10; // the sample mode's (0: the whole vocabulary), ct2_bench.py's too
};

void add_options(CLI::App& app, options& o) {
  app.add_option("--model", o.model_dir)->required();
  app.add_option("--sources", o.sources_file)->required();
  app.add_option("--mode", o.mode)->check(CLI::IsMember({"encode", "greedy", "beam", "sample"}));
  app.add_option("--batch", o.batch)->check(CLI::Range(1, 4096));
  app.add_option("--beam", o.beam)->check(CLI::Range(1, 64));
  app.add_option("--new-tokens", o.new_tokens)->check(CLI::Range(1, 100000));
  app.add_option("--threads", o.threads)->check(CLI::Range(0, 1024));
  app.add_option("--samples", o.samples)->check(CLI::Range(1, 1000));
  app.add_option("--sampling-topk", o.sampling_topk)->check(CLI::Range(0, 1 << 20));
  app.add_option("--device", o.device)->check(CLI::IsMember({"cpu", "cuda", "opencl", "auto"}));
  app.add_option("--compute-type", o.compute_type)->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  app.add_option("--kv-cache", o.kv_cache)->check(CLI::IsMember({"float32", "float16", "auto"}));
}

// The first `batch` lines of token ids.
std::vector<halformer::sentence> read_sources(const std::string& file, int batch) {
  std::vector<halformer::sentence> sources;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line) && int(sources.size()) < batch;) {
    std::istringstream ss(line);
    halformer::sentence s;
    for (int id; ss >> id;)
      s.push_back(id);
    sources.push_back(s);
  }
  if (int(sources.size()) < batch)
    throw std::runtime_error("not enough source lines in " + file);
  return sources;
}

struct timed_runs {
  std::vector<double> secs; // sorted
  long tokens = 0;
  std::vector<std::vector<int>> first_tokens;
};

// One warm-up run, then `samples` timed ones; tokens without the final EOS, as
// CTranslate2 counts and returns them.
timed_runs time_runs(halformer::Model& model, const std::vector<halformer::sentence>& sources, const options& opt,
                     const halformer::decode_options& o) {
  timed_runs r;
  for (int s = 0; s < opt.samples + 1; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    long n = 0;
    if (opt.mode == "encode") {
      model.encode(sources);
      for (const auto& x : sources)
        n += long(x.size());
    } else {
      auto out = model.translate(sources, o);
      for (auto& h : out) {
        if (!h[0].tokens.empty() && h[0].tokens.back() == model.config().eos_id)
          h[0].tokens.pop_back();
        n += long(h[0].tokens.size());
        if (s == 0)
          r.first_tokens.push_back(h[0].tokens);
      }
    }
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0)
      r.secs.push_back(dt), r.tokens = n;
  }
  std::sort(r.secs.begin(), r.secs.end());
  return r;
}
} // namespace

int main(int argc, char** argv) {
  options opt;
  CLI::App app{"bench_e2e: halformer end to end (JSON on stdout)"};
  add_options(app, opt);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto sources = read_sources(opt.sources_file, opt.batch);
    halformer::load_options lo;
    lo.threads = opt.threads, lo.device = opt.device, lo.compute_type = opt.compute_type, lo.kv_cache = opt.kv_cache,
    lo.max_batch = opt.batch * opt.beam, lo.max_target_length = opt.new_tokens;
    const auto t_load = std::chrono::steady_clock::now();
    auto model = halformer::Model::load(opt.model_dir, lo);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
    halformer::decode_options o;
    o.beam = opt.mode == "beam" ? opt.beam : 1, o.max_len = opt.new_tokens;
    if (opt.mode == "sample")
      o.sampling_topk = opt.sampling_topk, o.seed = 1, o.min_decoding_length = opt.new_tokens - 1;
    const auto r = time_runs(model, sources, opt, o);
    const double median = r.secs[r.secs.size() / 2];
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    nlohmann::json j{{"system", "halformer"},
                     {"mode", opt.mode},
                     {"batch", opt.batch},
                     {"beam", o.beam},
                     {"median_s", median},
                     {"min_s", r.secs.front()},
                     {"max_s", r.secs.back()},
                     {"samples", opt.samples},
                     {"tokens", r.tokens},
                     {"tokens_per_s", r.tokens / median},
                     {"peak_rss_mb", ru.ru_maxrss / 1024.0},
                     {"load_s", load_s},
                     {"device", model.device()},
                     {"first_tokens", r.first_tokens}};
    std::printf("%s\n", j.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_e2e: %s\n", e.what());
    return 1;
  }
}
