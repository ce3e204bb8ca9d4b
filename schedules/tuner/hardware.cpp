#include "hardware.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace halformer::tuner {

std::string hardware::key() const { return cpu + "|" + features + "|" + std::to_string(cores); }

hardware this_machine() {
  hardware h;
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && h.cpu.empty())
      h.cpu = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream f(value);
      for (std::string w; f >> w;)
        if (w.rfind("avx", 0) == 0 || w == "fma" || w == "sse4_1" || w == "f16c" || w == "amx_tile")
          flags.insert(w);
    }
  }
  for (const auto& f : flags)
    h.features += (h.features.empty() ? "" : ",") + f;
  h.cores = int(std::thread::hardware_concurrency());
  if (h.cpu.empty())
    h.cpu = "unknown";
  return h;
}

} // namespace halformer::tuner
