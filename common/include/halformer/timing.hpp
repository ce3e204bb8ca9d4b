// The one timing loop (the benchmarks, the tuner's measuring harness): warm-up,
// then `samples` samples, each repeating the call until `min_ms` have passed;
// median, min and max of the per-call times.
// Several candidates are measured interleaved (A, B, C, A, B, C, ...) so that a
// noisy neighbour on this shared machine hits all of them alike.
#pragma once

#include "halformer/machine.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace halformer::timing {

// The bytes a measurement reads through (rotated weights, caches and tables; the
// read probe), so that they come from memory as a model's do, not from a cache:
// twice the last-level cache, at least 64 MiB. A fixed size is not enough: an
// Intel Xeon (family 6 model 207) here reports a 260 MiB L3, where a 128 MiB read
// ran at 41 GB/s and 256 MiB or more at 24 GB/s.
inline std::size_t rotation_bytes() {
  static const std::size_t bytes = std::max(std::size_t(64) << 20, 2 * machine::last_level_cache_bytes());
  return bytes;
}

// Copies of a set of `bytes` (a GEMM's weights) that read through
// rotation_bytes() in all: at least 1, at most 4096.
inline std::size_t rotation_copies(std::size_t bytes) {
  return std::clamp<std::size_t>(rotation_bytes() / std::max<std::size_t>(bytes, 1) + 1, 1, 4096);
}

struct stats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int samples = 0;
  nlohmann::json to_json() const {
    return {{"median_ms", median_ms}, {"min_ms", min_ms}, {"max_ms", max_ms}, {"samples", samples}};
  }
};

inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Each function runs one call; returns one stats per function.
inline std::vector<stats> interleaved(const std::vector<std::function<void()>>& fns, int samples, double min_ms,
                                      int warmup_calls = 2) {
  std::vector<std::vector<double>> times(fns.size());
  for (const auto& f : fns)
    for (int w = 0; w < warmup_calls; ++w)
      f();
  for (int s = 0; s < samples; ++s)
    for (std::size_t i = 0; i < fns.size(); ++i) {
      int reps = 0;
      const double t0 = now_ms();
      double t1 = t0;
      do {
        fns[i]();
        ++reps;
        t1 = now_ms();
      } while (t1 - t0 < min_ms);
      times[i].push_back((t1 - t0) / reps);
    }
  std::vector<stats> out;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    out.push_back({t[t.size() / 2], t.front(), t.back(), int(t.size())});
  }
  return out;
}

} // namespace halformer::timing
