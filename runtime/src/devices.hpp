// The devices a model runs on, and each one's kernel library: the CPU library's
// hf_*, the OpenCL library's hf_opencl_* and the CUDA library's hf_cuda_* are
// built from the same DSL kernels (different schedules), so the executor binds a
// kernel by name in whichever list its device has.
#pragma once

#include "halformer/kernel_call.hpp"

namespace halformer {

enum class device { cpu, opencl, cuda };

inline const char* device_name(device d) { return d == device::cpu ? "cpu" : d == device::cuda ? "cuda" : "opencl"; }

// Halide's interface to `d`'s memory; null on the CPU.
inline const halide_device_interface_t* interface_of(device d) {
  return d == device::cpu ? nullptr : halformer_device_interface(device_name(d));
}

inline const halformer_kernel* kernels_of(device d) {
#if HALFORMER_GPU
  if (d == device::opencl)
    return halformer_kernels_opencl();
  if (d == device::cuda)
    return halformer_kernels_cuda();
#else
  if (d != device::cpu)
    throw error(std::string("this build has no ") + device_name(d) + " kernels (HALFORMER_GPU=OFF)");
#endif
  return halformer_kernels_cpu();
}

// The kernel `name` on `d`, bound to what the caller passes (see kernel_call).
inline kernel_call bind_kernel(device d, const std::string& name, const std::vector<arg_spec>& args) {
  return kernel_call(find_kernel(kernels_of(d), name), args);
}

} // namespace halformer
