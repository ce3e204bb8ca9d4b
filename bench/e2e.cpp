// halformer end to end through its C++ API, one case per process (so that peak
// RSS is the case's): encode a batch, or translate it greedily or with beam
// search. Prints JSON: median/min/max seconds per batch, tokens per second
// (encode: source tokens; decode: generated tokens), peak RSS, and the first
// sample's tokens (to compare outputs across runtimes).
//   bench_e2e --model DIR --sources FILE --mode encode|greedy|beam --batch B
//             [--beam K] [--new-tokens N] [--threads T] [--samples S] [--device D]
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

int main(int argc, char** argv) {
  std::string model_dir, sources_file, mode = "greedy", device = "cpu", compute_type = "float32", kv_cache = "auto";
  int batch = 1, beam = 4, new_tokens = 64, threads = 0, samples = 3;
  CLI::App app{"bench_e2e: halformer end to end (JSON on stdout)"};
  app.add_option("--model", model_dir)->required();
  app.add_option("--sources", sources_file)->required();
  app.add_option("--mode", mode)->check(CLI::IsMember({"encode", "greedy", "beam"}));
  app.add_option("--batch", batch)->check(CLI::Range(1, 4096));
  app.add_option("--beam", beam)->check(CLI::Range(1, 64));
  app.add_option("--new-tokens", new_tokens)->check(CLI::Range(1, 100000));
  app.add_option("--threads", threads)->check(CLI::Range(0, 1024));
  app.add_option("--samples", samples)->check(CLI::Range(1, 1000));
  app.add_option("--device", device)->check(CLI::IsMember({"cpu", "cuda", "opencl", "auto"}));
  app.add_option("--compute-type", compute_type)->check(CLI::IsMember({"float32", "int8", "bfloat16", "auto"}));
  app.add_option("--kv-cache", kv_cache)->check(CLI::IsMember({"float32", "float16", "auto"}));
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<halformer::sentence> sources;
    std::ifstream in(sources_file);
    for (std::string line; std::getline(in, line) && int(sources.size()) < batch;) {
      std::istringstream ss(line);
      halformer::sentence s;
      for (int id; ss >> id;)
        s.push_back(id);
      sources.push_back(s);
    }
    if (int(sources.size()) < batch)
      throw std::runtime_error("not enough source lines in " + sources_file);
    halformer::load_options lo;
    lo.threads = threads, lo.device = device, lo.compute_type = compute_type, lo.kv_cache = kv_cache,
    lo.max_batch = batch * beam, lo.max_target_length = new_tokens;
    const auto t_load = std::chrono::steady_clock::now();
    auto model = halformer::Model::load(model_dir, lo);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
    halformer::decode_options o;
    o.beam = mode == "beam" ? beam : 1, o.max_len = new_tokens;
    std::vector<double> secs;
    std::vector<std::vector<int>> first_tokens;
    long tokens = 0;
    for (int s = 0; s < samples + 1; ++s) { // the first run is a warm-up
      const auto t0 = std::chrono::steady_clock::now();
      long n = 0;
      if (mode == "encode") {
        model.encode(sources);
        for (const auto& x : sources)
          n += long(x.size());
      } else {
        auto out = model.translate(sources, o);
        for (auto& h : out) { // tokens without the final EOS, as CTranslate2 counts and returns them
          if (!h[0].tokens.empty() && h[0].tokens.back() == model.config().eos_id)
            h[0].tokens.pop_back();
          n += long(h[0].tokens.size());
        }
        if (s == 0)
          for (const auto& h : out)
            first_tokens.push_back(h[0].tokens);
      }
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 0)
        secs.push_back(dt), tokens = n;
    }
    std::sort(secs.begin(), secs.end());
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    nlohmann::json j{{"system", "halformer"},
                     {"mode", mode},
                     {"batch", batch},
                     {"beam", o.beam},
                     {"median_s", secs[secs.size() / 2]},
                     {"min_s", secs.front()},
                     {"max_s", secs.back()},
                     {"samples", samples},
                     {"tokens", tokens},
                     {"tokens_per_s", tokens / secs[secs.size() / 2]},
                     {"peak_rss_mb", ru.ru_maxrss / 1024.0},
                     {"load_s", load_s},
                     {"device", model.device()},
                     {"first_tokens", first_tokens}};
    std::printf("%s\n", j.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_e2e: %s\n", e.what());
    return 1;
  }
}
