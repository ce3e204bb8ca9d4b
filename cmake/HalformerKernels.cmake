# The kernel libraries, every kernel in each:
# - CPU: the x86 ISAs of targets.cmake with runtime dispatch (most specialised
#   first; the last target is the baseline), merged into lib/libhalformer_kernels.a
#   (build-lib: the AArch64 ISAs instead); only DOT_PRODUCTS kernels are compiled
#   for the dot-product ISAs (avx512_vnni, arm_dot_prod);
# - OpenCL (hf_opencl_*) and CUDA (hf_cuda_*: PTX for capabilities 8.6, 8.0 and
#   7.0, chosen at run time by the device's capability; newer GPUs JIT the PTX),
#   from the GPU schedules, merged into lib/libhalformer_kernels_{opencl,cuda}.a.
# One Halide runtime (x86 host code plus the CUDA and OpenCL modules, which load
# their drivers on first use) serves all of them.
#
# The same rules build `halformer build-lib`'s libraries (cmake/kernel_library/):
# HALFORMER_CPU and HALFORMER_GPU_APIS choose the libraries, the *_TARGETS their
# Halide targets, HALFORMER_KERNEL_FILTER the kernels (empty: all) and
# HALFORMER_EMIT extra generator outputs (stmt, assembly, ...).

include(targets)
set(HALFORMER_CPU_TARGETS ${HALFORMER_X86_TARGET_LIST}
    CACHE STRING "Halide targets of the CPU kernel library, most specialised first (one architecture)")
set(HALFORMER_OPENCL_TARGETS ${HALFORMER_OPENCL_TARGET_LIST} CACHE STRING "Halide targets of the OpenCL kernel library")
set(HALFORMER_CUDA_TARGETS ${HALFORMER_CUDA_TARGET_LIST}
    CACHE STRING "Halide targets of the CUDA kernel library, newest capability first")
set(HALFORMER_GPU_KNOB_FILE ${HALFORMER_SOURCE_DIR}/schedules/knobs/gpu.json
    CACHE FILEPATH "Knob values of the GPU schedules")
option(HALFORMER_GPU "Build the CUDA and OpenCL kernel libraries" ON)
if (NOT DEFINED HALFORMER_CPU)
  set(HALFORMER_CPU ON)
endif ()
if (NOT DEFINED HALFORMER_GPU_APIS)
  set(HALFORMER_GPU_APIS "")
  if (HALFORMER_GPU)
    set(HALFORMER_GPU_APIS opencl cuda)
  endif ()
endif ()

# The runtime of the CPU targets' architecture (an AArch64 library: build-lib
# --target arm64, cross-compiled by cmake/aarch64-linux-gnu.cmake).
set(runtime_target ${HALFORMER_RUNTIME_TARGET})
list(GET HALFORMER_CPU_TARGETS 0 first_cpu_target)
if (HALFORMER_CPU AND first_cpu_target MATCHES "^arm-64-")
  set(runtime_target ${HALFORMER_ARM64_RUNTIME_TARGET})
endif ()
add_halide_runtime(halformer_runtime TARGETS ${runtime_target})

# The CPU targets of a kernel: HALFORMER_CPU_TARGETS, less the dot-product ISAs'
# targets unless it is a DOT_PRODUCTS kernel (its GEMMs int8 or bfloat16).
# (Global properties: the function is called from other directories' scopes.)
set_property(GLOBAL PROPERTY HALFORMER_DOT_PRODUCT_TARGETS ${HALFORMER_DOT_PRODUCT_TARGETS})
function(halformer_cpu_targets_of out name)
  set(targets ${HALFORMER_CPU_TARGETS})
  get_property(dot GLOBAL PROPERTY HALFORMER_DOT_PRODUCT_KERNELS)
  get_property(dot_targets GLOBAL PROPERTY HALFORMER_DOT_PRODUCT_TARGETS)
  if (NOT name IN_LIST dot AND dot_targets)
    list(REMOVE_ITEM targets ${dot_targets})
    if (NOT targets) # a library of dot-product ISAs alone: every kernel for them
      set(targets ${HALFORMER_CPU_TARGETS})
    endif ()
  endif ()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

set(HALFORMER_KERNELS "")
# halformer_kernel(NAME [DOT_PRODUCTS] [BUCKETS b ...]): function hf_NAME from the kernel NAME of
# dsl/kernels.hpp (the generic generator with kernel=NAME; the DSL says its
# arguments and its schedule). BUCKETS: the shape buckets (prefill, decode,
# decode1, decode_wide; halformer/shape_buckets.hpp) the model runs the kernel in
# and the tuner tunes it at; the knob file holds a knob set for each, and the
# generator makes each distinct set a specialize() branch of the one pipeline
# (schedules/buckets.hpp). DOT_PRODUCTS: also compiled for the dot-product ISAs
# (targets.cmake). CPU_ONLY: not in the GPU libraries.
function(halformer_kernel name)
  cmake_parse_arguments(ARG "DOT_PRODUCTS;CPU_ONLY" "" "BUCKETS" ${ARGN})
  if (HALFORMER_KERNEL_FILTER AND NOT name IN_LIST HALFORMER_KERNEL_FILTER)
    return()
  endif ()
  if (ARG_DOT_PRODUCTS)
    set_property(GLOBAL APPEND PROPERTY HALFORMER_DOT_PRODUCT_KERNELS ${name})
  endif ()
  set(extra "")
  foreach (e IN LISTS HALFORMER_EMIT)
    string(TOUPPER ${e} E)
    list(APPEND extra ${E} ${name}_${e})
  endforeach ()
  # "" is the CPU library; each GPU API has its own.
  foreach (api IN ITEMS "" ${HALFORMER_GPU_APIS})
    set(amx_knobs "")
    if (api STREQUAL "")
      if (NOT HALFORMER_CPU)
        continue()
      endif ()
      set(fn hf_${name})
      halformer_cpu_targets_of(targets ${name})
      set(knobs ${HALFORMER_BUILD_KNOB_FILE})
      if (HALFORMER_DEFAULT_KNOB_FILE) # unset in the AArch64 sub-build, which has no amx target
        set(amx_knobs amx_knob_file=${HALFORMER_DEFAULT_KNOB_FILE}) # the amx target's (kernel_generator.cpp)
      endif ()
    elseif (ARG_CPU_ONLY)
      set_property(GLOBAL APPEND PROPERTY HALFORMER_CPU_ONLY_KERNELS ${name})
      continue()
    else ()
      string(TOUPPER ${api} API)
      set(fn hf_${api}_${name})
      set(targets ${HALFORMER_${API}_TARGETS})
      set(knobs ${HALFORMER_GPU_KNOB_FILE})
    endif ()
    add_halide_library(${fn} FROM halformer.generators
      GENERATOR kernel
      FUNCTION_NAME ${fn}
      TARGETS ${targets}
      USE_RUNTIME halformer_runtime
      PARAMS kernel=${name} knob_file=${knobs} ${amx_knobs}
      DEPENDS ${knobs}
      ${extra})
  endforeach ()
  set_property(GLOBAL PROPERTY HALFORMER_KERNEL_HEADER_DIR ${CMAKE_CURRENT_BINARY_DIR})
  set(HALFORMER_KERNELS ${HALFORMER_KERNELS} ${name} PARENT_SCOPE)
  # The tuner's catalog: the kernel's shape buckets and whether it has dot-product
  # ISA code (the rest comes from the DSL).
  set(buckets "")
  foreach (b IN LISTS ARG_BUCKETS)
    string(APPEND buckets "\"${b}\",")
  endforeach ()
  string(REGEX REPLACE ",$" "" buckets "${buckets}")
  set(dot_products false)
  if (ARG_DOT_PRODUCTS)
    set(dot_products true)
  endif ()
  set_property(GLOBAL APPEND_STRING PROPERTY HALFORMER_KERNEL_CATALOG
               "{\"name\": \"${name}\", \"buckets\": [${buckets}], \"dot_products\": ${dot_products}},\n")
endfunction()

halformer_kernel(embedding BUCKETS prefill decode)
# The float32 GEMMs (head projections, out projection, FFN, logits) read weights
# in panels: one knob set each (cpu/panels.hpp), no shape buckets.
halformer_kernel(qkv_projection)
halformer_kernel(kv_projection)
halformer_kernel(q_projection)
halformer_kernel(attention BUCKETS prefill decode decode1)
# float16 keys and values for the int8 and bfloat16 models on the CPU
# (dsl/kernels_attention.hpp): attention_f16kv takes attention's schedule.
halformer_kernel(attention_f16kv CPU_ONLY BUCKETS prefill decode decode1)
halformer_kernel(kv_to_float16 CPU_ONLY)
halformer_kernel(out_projection)
halformer_kernel(ffn_relu)
halformer_kernel(ffn_gelu)
halformer_kernel(ffn_silu) # Marian's swish
halformer_kernel(layernorm BUCKETS prefill decode)
halformer_kernel(add_layernorm BUCKETS prefill)
halformer_kernel(softmax BUCKETS prefill)
halformer_kernel(log_softmax BUCKETS decode)
halformer_kernel(logits)
halformer_kernel(greedy_pick)
halformer_kernel(beam_candidates)
halformer_kernel(sample_pick)
# int8: one knob set each, their schedule splits the reduction once (cpu/quantized.hpp);
# the GEMMs are dot products (vpdpbusd byte quads with avx512_vnni)
halformer_kernel(embedding_int8)
halformer_kernel(logits_int8 DOT_PRODUCTS)
halformer_kernel(qkv_projection_int8 DOT_PRODUCTS)
halformer_kernel(kv_projection_int8 DOT_PRODUCTS)
halformer_kernel(q_projection_int8 DOT_PRODUCTS)
halformer_kernel(out_projection_int8 DOT_PRODUCTS)
halformer_kernel(ffn_relu_int8 DOT_PRODUCTS)
halformer_kernel(ffn_gelu_int8 DOT_PRODUCTS)
halformer_kernel(ffn_silu_int8 DOT_PRODUCTS)
# bfloat16: the int8 kernels' schedules; vdpbf16ps with avx512_vnni, emulated
# (correct, slow) by the other ISAs; no GPU schedules.
foreach (k IN ITEMS logits qkv_projection kv_projection q_projection out_projection ffn_relu ffn_gelu ffn_silu)
  halformer_kernel(${k}_bf16 DOT_PRODUCTS CPU_ONLY)
endforeach ()
get_property(catalog GLOBAL PROPERTY HALFORMER_KERNEL_CATALOG)
string(REGEX REPLACE ",\n$" "\n" catalog "${catalog}")
file(WRITE ${CMAKE_BINARY_DIR}/share/halformer/kernels.json "[\n${catalog}]\n")
get_directory_property(parent_dir PARENT_DIRECTORY)
if (parent_dir) # included from a subdirectory (generators/): its parent lists the kernels too
  set(HALFORMER_KERNELS ${HALFORMER_KERNELS} PARENT_SCOPE)
endif ()
