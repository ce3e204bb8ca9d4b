// The identity of the machine a schedule was measured on. Database lookups are
// exact on it: a record from another CPU model, feature set or core count is
// never used silently.
#pragma once

#include <string>

namespace halformer::tuner {

struct hardware {
  std::string cpu;         // /proc/cpuinfo "model name"
  std::string features;    // the x86 vector features that matter, sorted
  int cores = 0;           // online logical CPUs
  std::string key() const; // "cpu|features|cores"
};

hardware this_machine();

} // namespace halformer::tuner
