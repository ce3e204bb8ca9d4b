// Where a translation's time goes: every kernel's time per phase, and the host
// work between kernels (Model::set_profiling, `halformer run --profile`).
#pragma once

#include <string>
#include <vector>

namespace halformer {

struct kernel_time {
  std::string phase;  // "encode" or "decode"
  std::string kernel; // a library kernel's name, or a host step such as "reorder_caches"
  long calls = 0;
  double seconds = 0;
};

struct run_profile {
  std::vector<kernel_time> entries; // in first-call order
  double encode_seconds = 0;        // wall time of encoding (and projecting the memory)
  double decode_seconds = 0;        // wall time of the decode loops
  long decode_steps = 0;
  // Wall time of a phase not spent in its kernels: the host's work.
  double host_seconds(const std::string& phase) const;
  // A table: per phase, every kernel's calls, total ms, ms per call and share.
  std::string table() const;
};

} // namespace halformer
