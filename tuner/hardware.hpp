// The identity of the machine a schedule was measured on. Database lookups are
// exact on it: a record from another CPU model, feature set or core count is
// never used silently.
#pragma once

#include <string>

namespace halformer::tuner {

struct hardware {
  std::string cpu;          // /proc/cpuinfo "model name"
  std::string features;     // the x86 vector features that matter, sorted
  int cores = 0;            // online logical CPUs
  std::string key() const;  // "cpu|features|cores"
  std::string slug() const; // "amd-epyc-avx2-2c-1f3a9c0d": a file name for this hardware's knob file
};

hardware this_machine();

// The OpenCL device the Halide runtime would use (the first device of the first
// platform, as Halide picks by default), "vendor name | device name | compute
// units", read through libOpenCL loaded with dlopen; empty if there is none.
std::string opencl_device();

// The identity key of records measured with `isa`: the CPU's key, plus the
// OpenCL device for "opencl" (a GPU schedule's timing is the device's, not the CPU's).
std::string hardware_key(const hardware& hw, const std::string& isa);

} // namespace halformer::tuner
