// The versions records and reports carry, from their one source each: Halide's
// own version macros and CMake's project(VERSION).
#pragma once

#include <HalideRuntime.h>

#include <string>

namespace halformer {

inline std::string halide_version() {
  return std::to_string(HALIDE_VERSION_MAJOR) + "." + std::to_string(HALIDE_VERSION_MINOR) + "." +
         std::to_string(HALIDE_VERSION_PATCH);
}
inline constexpr const char* halformer_version = HALFORMER_VERSION;

} // namespace halformer
