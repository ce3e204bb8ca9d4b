// Runs a command in a child process (its own process group) with a time limit,
// capturing stdout and stderr: a crash, a hang or an LLVM clash in the child
// cannot take the caller down.
#pragma once

#include <string>
#include <vector>

namespace halformer::tuner {

struct process_result {
  int exit_code = -1; // valid when !timed_out && signal == 0
  int signal = 0;     // the signal that killed it, if any
  bool timed_out = false;
  std::string out, err;
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  std::string describe() const;
};

process_result run_process(const std::vector<std::string>& argv, double timeout_s,
                           const std::vector<std::string>& extra_env = {});

} // namespace halformer::tuner
