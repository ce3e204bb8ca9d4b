// The identity of the machine a schedule was measured on (halformer/machine.hpp),
// and the key of its records per ISA.
#pragma once

#include "halformer/machine.hpp"

#include <string>

namespace halformer::tuner {

using hardware = machine::identity;
using machine::this_machine;

// The identity key of records measured with `isa`: the CPU's key, plus the
// OpenCL device for "opencl" (a GPU schedule's timing is the device's, not the CPU's).
std::string hardware_key(const hardware& hw, const std::string& isa);

} // namespace halformer::tuner
