// One knob value of a knob file: an integer, or a fact of the machine that reads
// the file (the build, and by the knob files' contract the machine that runs the
// kernels): "cores" (at most 64), or "l2_kib/N", its per-core L2 cache in KiB
// divided by N and rounded down to a power of two (L2: 512 KiB where sysfs does
// not say).
#pragma once

#include "halformer/machine.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace halformer {

inline int knob_value(const nlohmann::json& v, const std::string& where) {
  const std::string text = v.is_string() ? v.get<std::string>() : "";
  if (text == "cores")
    return std::min(machine::online_cpus(), 64);
  if (text.rfind("l2_kib/", 0) == 0) {
    const int divisor = std::atoi(text.c_str() + 7);
    if (divisor < 1)
      throw std::runtime_error(where + ": '" + text + "' needs a divisor >= 1");
    int kib = 1; // rounded down to a power of two: knobs declare powers of two
    while (kib * 2 <= machine::l2_kib() / divisor)
      kib *= 2;
    return kib;
  }
  if (!v.is_number_integer())
    throw std::runtime_error(where + " is not an integer, \"cores\" or \"l2_kib/N\"");
  return v.get<int>();
}

} // namespace halformer
