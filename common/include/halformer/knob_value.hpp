// One knob value of a knob file: an integer, or "cores", the core count of the
// machine that reads the file (the build, and by the knob files' contract the
// machine that runs the kernels), at most 64.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

namespace halformer {

inline int machine_cores() { return int(std::clamp(std::thread::hardware_concurrency(), 1u, 64u)); }

inline int knob_value(const nlohmann::json& v, const std::string& where) {
  if (v.is_string() && v.get<std::string>() == "cores")
    return machine_cores();
  if (!v.is_number_integer())
    throw std::runtime_error(where + " is not an integer (or \"cores\")");
  return v.get<int>();
}

} // namespace halformer
