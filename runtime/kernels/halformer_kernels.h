/* halformer kernel libraries: ISA selection, GPU devices and error reporting.
 *
 * Every kernel hf_<name>() is declared in its own header hf_<name>.h (included
 * below) and returns 0 or a Halide error code. Each kernel holds code for AVX-512
 * (Skylake set), AVX2+FMA and SSE4.1 and runs the most specialised one the CPU
 * supports, unless an ISA is forced: set HALFORMER_ISA=avx512|avx2|sse41|auto
 * before halformer_kernels_init(), or call halformer_force_isa().
 * The GPU libraries hold hf_opencl_<name>() and hf_cuda_<name>() with the same
 * signatures; their buffers live on the device between calls (Halide copies host
 * data over when host_dirty is set and leaves outputs device_dirty: call
 * halide_copy_to_host() before reading them).
 * Plain C; needs no Halide installation (HalideRuntime.h ships beside this header). */
#ifndef HALFORMER_KERNELS_H
#define HALFORMER_KERNELS_H

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Installs the ISA selection and the error handler; reads HALFORMER_ISA.
 * Returns 0, or -1 if HALFORMER_ISA names no ISA (see halformer_last_error()). */
int halformer_kernels_init(void);

/* "auto", "avx512", "avx2" or "sse41". Returns 0, or -1 for another name.
 * Forcing an ISA the CPU lacks falls back to the next one it has. Each kernel
 * chooses its ISA on its first call and keeps it: force before any kernel runs
 * (afterwards a different choice returns -1). */
int halformer_force_isa(const char* isa);

/* The ISA the kernels run now: "avx512", "avx2" or "sse41". */
const char* halformer_active_isa(void);

/* Whether the CPU itself supports `isa` (ignoring any forcing). */
int halformer_cpu_supports(const char* isa);

/* 1 if `api` ("cpu", "cuda", "opencl") has a usable device, else 0 with the reason
 * in halformer_last_error(). */
int halformer_device_available(const char* api);

/* The Halide device interface of "cuda" or "opencl" (NULL for others). */
const struct halide_device_interface_t* halformer_device_interface(const char* api);

/* Compute capability of CUDA device 0 as major*10+minor (e.g. 86), or 0 if there
 * is no usable CUDA driver or device (then halformer_last_error() says why). */
int halformer_cuda_capability(void);

/* Shape variants. A kernel of the CPU library may hold several variants of its
 * schedule, each tuned for one bucket of shapes: "prefill" (t > 1), "decode"
 * (t = 1) and "decode1" (t = 1, batch = 1), where t and batch are the token rows
 * and batch of its first output. hf_<name>() runs the variant of the call's
 * bucket (the nearest one if it has none for it); every variant computes every
 * shape correctly, only their speed differs. */
const char* halformer_shape_bucket(int t, int batch);
/* How often hf_<kernel>() ran its `bucket` variant in this process. */
long halformer_variant_calls(const char* kernel, const char* bucket);
/* Used by the generated dispatchers: the index in buckets[0..n) to run;
 * calls[0..n) are the dispatcher's own call counters. */
struct halide_filter_metadata_t;
int halformer_choose_variant(const char* kernel, const struct halide_filter_metadata_t* md, void** args,
                             const char* const* buckets, int n, long* calls);

/* The message of the last kernel error on this thread ("" if none). */
const char* halformer_last_error(void);
void halformer_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif
