// `halformer build-lib`: a static kernel library (.a + C headers, usable from C
// with no Halide installed) for chosen Halide targets and kernels, built by the
// main build's CMake rules (cmake/kernel_library) with the knobs `--knobs` names
// (host, defaults or a file: as HALFORMER_KNOBS, schedules/CMakeLists.txt).
#pragma once

#include "tuner.hpp"

#include <string>
#include <vector>

namespace halformer::tuner {

struct build_lib_options {
  std::vector<std::string> targets; // Halide target strings, most specialised first; "x86" = the three ISAs
  std::string out_dir;
  std::string knobs = "host";       // the CPU kernels' knobs: host, defaults or a knob file
  std::vector<std::string> kernels; // empty: all
  std::vector<std::string> emit;    // extra outputs: stmt, assembly, ...
};

// Returns a summary; throws halformer::error on failure.
std::string build_lib(const toolchain& t, const catalog& c, const build_lib_options& o);

} // namespace halformer::tuner
