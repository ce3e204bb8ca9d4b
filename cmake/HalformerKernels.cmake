# The kernel libraries, every kernel in each:
# - CPU: three x86 ISAs with runtime dispatch (most specialised first; the last
#   target is the baseline), merged into lib/libhalformer_kernels.a;
# - OpenCL (hf_opencl_*) and CUDA (hf_cuda_*: PTX for capabilities 8.6, 8.0 and
#   7.0, chosen at run time by the device's capability; newer GPUs JIT the PTX),
#   from the GPU schedules, merged into lib/libhalformer_kernels_{opencl,cuda}.a.
# One Halide runtime (x86 host code plus the CUDA and OpenCL modules, which load
# their drivers on first use) serves all of them.

set(HALFORMER_X86_TARGETS
    x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41
    x86-64-linux-avx-avx2-f16c-fma-sse41
    x86-64-linux-sse41
    CACHE STRING "Halide targets of the CPU kernel library, most specialised first")

set(HALFORMER_OPENCL_TARGETS x86-64-linux-sse41-opencl CACHE STRING "Halide targets of the OpenCL kernel library")
set(HALFORMER_CUDA_TARGETS
    x86-64-linux-sse41-cuda-cuda_capability_86
    x86-64-linux-sse41-cuda-cuda_capability_80
    x86-64-linux-sse41-cuda-cuda_capability_70
    CACHE STRING "Halide targets of the CUDA kernel library, newest capability first")
set(HALFORMER_GPU_KNOB_FILE ${CMAKE_SOURCE_DIR}/schedules/knobs/gpu.json
    CACHE FILEPATH "Knob values of the GPU schedules")
option(HALFORMER_GPU "Build the CUDA and OpenCL kernel libraries" ON)

add_halide_runtime(halformer_runtime TARGETS x86-64-linux-sse41-cuda-opencl)

set(HALFORMER_KERNELS "")
# halformer_kernel(NAME [BUCKETS b ...]): function hf_NAME from the kernel NAME of
# dsl/kernels.hpp (the generic generator with kernel=NAME; the DSL says its
# arguments and its schedule). BUCKETS: the shape buckets (prefill, decode, decode1)
# the model runs the kernel in; the tuner tunes and the knob file holds a knob set
# for each, and the generator makes each distinct set a specialize() branch of the
# one pipeline (schedules/buckets.hpp).
function(halformer_kernel name)
  cmake_parse_arguments(ARG "" "" "BUCKETS" ${ARGN})
  add_halide_library(hf_${name} FROM halformer.generators
    GENERATOR kernel
    FUNCTION_NAME hf_${name}
    TARGETS ${HALFORMER_X86_TARGETS}
    USE_RUNTIME halformer_runtime
    PARAMS kernel=${name} knob_file=${HALFORMER_BUILD_KNOB_FILE}
    DEPENDS ${HALFORMER_BUILD_KNOB_FILE})
  if (HALFORMER_GPU)
    foreach (api IN ITEMS opencl cuda)
      string(TOUPPER ${api} API)
      add_halide_library(hf_${api}_${name} FROM halformer.generators
        GENERATOR kernel
        FUNCTION_NAME hf_${api}_${name}
        TARGETS ${HALFORMER_${API}_TARGETS}
        USE_RUNTIME halformer_runtime
        PARAMS kernel=${name} knob_file=${HALFORMER_GPU_KNOB_FILE}
        DEPENDS ${HALFORMER_GPU_KNOB_FILE})
    endforeach ()
  endif ()
  set(HALFORMER_KERNELS ${HALFORMER_KERNELS} ${name} PARENT_SCOPE)
  # The tuner's catalog: the kernel's shape buckets (the rest comes from the DSL).
  set(buckets "")
  foreach (b IN LISTS ARG_BUCKETS)
    string(APPEND buckets "\"${b}\",")
  endforeach ()
  string(REGEX REPLACE ",$" "" buckets "${buckets}")
  set_property(GLOBAL APPEND_STRING PROPERTY HALFORMER_KERNEL_CATALOG
               "{\"name\": \"${name}\", \"buckets\": [${buckets}]},\n")
endfunction()

halformer_kernel(embedding BUCKETS prefill decode)
halformer_kernel(qkv_projection BUCKETS prefill decode decode1)
halformer_kernel(kv_projection BUCKETS prefill)
halformer_kernel(q_projection BUCKETS decode decode1)
halformer_kernel(attention BUCKETS prefill decode decode1)
halformer_kernel(out_projection BUCKETS prefill decode decode1)
halformer_kernel(ffn_relu BUCKETS prefill decode decode1)
halformer_kernel(ffn_gelu)
halformer_kernel(layernorm BUCKETS prefill decode)
halformer_kernel(add_layernorm BUCKETS prefill)
halformer_kernel(softmax BUCKETS prefill)
halformer_kernel(log_softmax BUCKETS decode)
halformer_kernel(logits BUCKETS decode decode1)
halformer_kernel(greedy_pick)
get_property(catalog GLOBAL PROPERTY HALFORMER_KERNEL_CATALOG)
string(REGEX REPLACE ",\n$" "\n" catalog "${catalog}")
file(WRITE ${CMAKE_BINARY_DIR}/share/halformer/kernels.json "[\n${catalog}]\n")
set(HALFORMER_KERNELS ${HALFORMER_KERNELS} PARENT_SCOPE)
