// `halformer build-lib`: a static kernel library (.a + C headers, usable from C
// with no Halide installed) for chosen Halide targets and kernels, built by the
// main build's CMake rules (cmake/kernel_library) with the knob file the build
// chose (or another).
#pragma once

#include "tuner.hpp"

#include <string>
#include <vector>

namespace halformer::tuner {

struct build_lib_options {
  std::vector<std::string> targets; // Halide target strings, most specialised first; "x86" = the three ISAs
  std::string out_dir;
  std::string knob_file;            // the CPU kernels' knob file (empty: the one the build chose)
  std::vector<std::string> kernels; // empty: all
  std::vector<std::string> emit;    // extra outputs: stmt, assembly, ...
};

// Returns a summary; throws halformer::error on failure.
std::string build_lib(const toolchain& t, const catalog& c, const build_lib_options& o);

} // namespace halformer::tuner
