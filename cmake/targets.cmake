# The Halide targets of halformer's libraries, defined here once: the CMake
# libraries (HalformerKernels.cmake) default to these lists, and the C++ tools
# (the tuner, build-lib) read them from the generated halformer/targets.hpp.
#   x86: one target per ISA, most specialised first (the last is the baseline).
#   avx512_vnni is Halide's avx512_zen4 feature set (AVX-512 with VNNI, BF16,
#   VBMI2, BITALG: Zen 4 and 5, Sapphire Rapids and later), the one that lets
#   Halide 21 emit vpdpwssd / vpdpbusd / vdpbf16ps; it changes nothing of float32
#   code, so only the dot-product kernels (DOT_PRODUCTS in HalformerKernels.cmake)
#   are compiled for it. Halide 21 gates those instructions on avx512_zen4 even
#   at 256 bits, so AVX-VNNI without AVX-512 (Alder Lake) gains no target.
#   amx adds Halide's avx512_sapphirerapids (AMX-INT8, AMX-BF16): the int8 and
#   bfloat16 GEMMs' tile form at prefill (dsl/lower_amx.hpp); chosen only where
#   the OS grants the tile state (runtime/kernels/amx.c).
set(HALFORMER_ISA_TARGETS
    "amx=x86-64-linux-avx-avx2-avx512-avx512_skylake-avx512_cannonlake-avx512_zen4-avx512_sapphirerapids-f16c-fma-sse41"
    "avx512_vnni=x86-64-linux-avx-avx2-avx512-avx512_skylake-avx512_cannonlake-avx512_zen4-f16c-fma-sse41"
    "avx512=x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41"
    "avx2=x86-64-linux-avx-avx2-f16c-fma-sse41"
    "sse41=x86-64-linux-sse41")
# AArch64 (`build-lib --target arm64`, cmake/aarch64-linux-gnu.cmake): NEON
# (ARMv8.0-A) and, for the dot-product kernels, ARMv8.2-A's dot products (sdot)
# with its half-precision arithmetic (arm_fp16). The float16 kernels only
# convert (fcvtl/fcvtn, ARMv8.0-A), so arm_fp16 gives them nothing to gain.
set(HALFORMER_ARM64_ISA_TARGETS
    "arm_dot_prod=arm-64-linux-arm_dot_prod-arm_fp16"
    "neon=arm-64-linux")
# The ISAs only the dot-product kernels are compiled for.
set(HALFORMER_DOT_PRODUCT_ISAS amx avx512_vnni arm_dot_prod)
set(HALFORMER_OPENCL_TARGET_LIST x86-64-linux-sse41-opencl)
# CUDA: PTX for capabilities 8.6, 8.0 and 7.0 (RTX 30, A100, V100), newest first;
# newer GPUs JIT the newest.
set(HALFORMER_CUDA_TARGET_LIST
    x86-64-linux-sse41-cuda-cuda_capability_86
    x86-64-linux-sse41-cuda-cuda_capability_80
    x86-64-linux-sse41-cuda-cuda_capability_70)
# The one Halide runtime every library of an architecture shares (host code
# plus the device modules, which load their drivers on first use).
set(HALFORMER_RUNTIME_TARGET x86-64-linux-sse41-cuda-opencl)
set(HALFORMER_ARM64_RUNTIME_TARGET arm-64-linux-cuda-opencl)

set(HALFORMER_DOT_PRODUCT_TARGETS "")
# <arch>_TARGET_LIST: the targets of (ISA=target) entries; <arch>_entries: them in C++.
macro(halformer_isa_list arch)
  set(HALFORMER_${arch}_TARGET_LIST "")
  set(${arch}_entries "")
  foreach (entry ${ARGN})
    string(REPLACE "=" ";" parts "${entry}")
    list(GET parts 0 isa)
    list(GET parts 1 target)
    list(APPEND HALFORMER_${arch}_TARGET_LIST ${target})
    if (isa IN_LIST HALFORMER_DOT_PRODUCT_ISAS)
      list(APPEND HALFORMER_DOT_PRODUCT_TARGETS ${target})
    endif ()
    string(APPEND ${arch}_entries "    {\"${isa}\", \"${target}\"},\n")
  endforeach ()
endmacro()
halformer_isa_list(X86 ${HALFORMER_ISA_TARGETS})
halformer_isa_list(ARM64 ${HALFORMER_ARM64_ISA_TARGETS})
function(halformer_cpp_list out)
  set(text "")
  foreach (t IN LISTS ARGN)
    string(APPEND text "\"${t}\", ")
  endforeach ()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
halformer_cpp_list(opencl_entries ${HALFORMER_OPENCL_TARGET_LIST})
halformer_cpp_list(cuda_entries ${HALFORMER_CUDA_TARGET_LIST})
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/halformer/targets.hpp CONTENT
"// Generated from cmake/targets.cmake: the Halide targets of halformer's libraries.
#pragma once
#include <utility>
namespace halformer::targets {
// (ISA, target), most specialised first.
inline constexpr std::pair<const char*, const char*> x86[] = {
${X86_entries}};
inline constexpr std::pair<const char*, const char*> arm64[] = {
${ARM64_entries}};
inline constexpr const char* opencl[] = {${opencl_entries}};
inline constexpr const char* cuda[] = {${cuda_entries}};
} // namespace halformer::targets
")
