#include "hardware.hpp"

namespace halformer::tuner {

std::string hardware_key(const hardware& hw, const std::string& isa) {
  if (isa != "opencl")
    return hw.key();
  static const std::string device = machine::opencl_device(); // loads libOpenCL and its ICDs: once per process
  return hw.key() + "|opencl:" + device;
}

} // namespace halformer::tuner
