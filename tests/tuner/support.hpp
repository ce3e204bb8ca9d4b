// What the tuner's tests share: a scratch directory, the build's real toolchain
// and catalog, and a small LayerNorm to tune.
#pragma once

#include "tuner.hpp"

#include <filesystem>
#include <string>
#include <unistd.h>

namespace halformer::tuner::testing {
struct temp_dir {
  std::string path;
  explicit temp_dir(const std::string& tag)
      : path((std::filesystem::temp_directory_path() / ("halformer_tuner_" + tag + "_" + std::to_string(::getpid())))
                 .string()) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

inline toolchain real_tools(const std::string& work) {
  toolchain t = toolchain::from_json_file(std::string(HALFORMER_SHARE) + "/tuner_paths.json");
  t.work_dir = work;
  return t;
}
inline catalog real_catalog() {
  return catalog::from_json_files(std::string(HALFORMER_SHARE) + "/kernels.json",
                                  std::string(HALFORMER_SHARE) + "/knob_spaces.json");
}
inline tune_options small_layernorm() {
  tune_options o;
  o.shape = canonical_shape("d_model=64,t=16,batch=2");
  o.isa = "sse41";
  o.samples = 3, o.min_sample_ms = 2, o.threads = 1, o.candidate_timeout_s = 20;
  return o;
}
inline knob_set with_rows_per_task(int v) {
  return {{"rows_per_task", v}, {"vectorize_reductions", 1}, {"vectors", 1}};
}
} // namespace halformer::tuner::testing
