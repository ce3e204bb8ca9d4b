// `halformer build-lib`: a static kernel library (.a + C headers, usable from C
// with no Halide installed) for chosen Halide targets, with the schedules the
// database holds for this machine (else the hand defaults).
#pragma once

#include "tuner.hpp"

#include <string>
#include <vector>

namespace halformer::tuner {

struct build_lib_options {
  std::vector<std::string> targets; // Halide target strings, most specialised first; "x86" = the three ISAs
  std::string out_dir, db_dir;
  std::vector<std::string> kernels; // empty: all
  std::vector<std::string> emit;    // extra outputs: stmt, assembly, ...
};

// Returns a summary; throws halformer::error on failure.
std::string build_lib(const toolchain& t, const catalog& c, const build_lib_options& o);

} // namespace halformer::tuner
