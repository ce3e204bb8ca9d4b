#include "profiler.hpp"

#include <cstdio>

namespace halformer {

namespace {
const char* phase_name(phase p) { return p == phase::encode ? "encode" : "decode"; }

template <class... T> std::string format(const char* f, T... v) {
  char line[160];
  std::snprintf(line, sizeof line, f, v...);
  return line;
}
} // namespace

void profiler::add(phase p, const std::string& kernel, double seconds) {
  auto [it, fresh] = index_.try_emplace({p, kernel}, profile_.entries.size());
  if (fresh)
    profile_.entries.push_back({phase_name(p), kernel, 0, 0});
  kernel_time& k = profile_.entries[it->second];
  ++k.calls;
  k.seconds += seconds;
}

void profiler::add_wall(phase p, double seconds) {
  (p == phase::encode ? profile_.encode_seconds : profile_.decode_seconds) += seconds;
}

double run_profile::host_seconds(const std::string& phase) const {
  double kernels = 0;
  for (const kernel_time& k : entries)
    if (k.phase == phase)
      kernels += k.seconds;
  return (phase == "encode" ? encode_seconds : decode_seconds) - kernels;
}

std::string run_profile::table() const {
  std::string s = format("%-8s %-28s %8s %11s %11s %7s\n", "phase", "kernel", "calls", "total ms", "ms/call", "share");
  for (const char* ph : {"encode", "decode"}) {
    const double wall = ph == std::string("encode") ? encode_seconds : decode_seconds;
    const auto row = [&](const std::string& name, long calls, double sec) {
      s += format("%-8s %-28s %8ld %11.3f %11.4f %6.1f%%\n", ph, name.c_str(), calls, sec * 1e3,
                  calls ? sec * 1e3 / double(calls) : 0.0, wall > 0 ? 100 * sec / wall : 0.0);
    };
    for (const kernel_time& k : entries)
      if (k.phase == ph)
        row(k.kernel, k.calls, k.seconds);
    row("(host work)", 0, host_seconds(ph));
    row("(phase wall time)", 0, wall);
  }
  s += format("decode steps: %ld; %.3f ms per step\n", decode_steps,
              decode_steps ? decode_seconds * 1e3 / double(decode_steps) : 0.0);
  return s;
}

} // namespace halformer
