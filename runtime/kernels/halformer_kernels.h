/* halformer kernel libraries: ISA selection, GPU devices and error reporting.
 *
 * Every kernel hf_<name>() is declared in its own header hf_<name>.h (included
 * below) and returns 0 or a Halide error code. Each kernel holds code for AVX-512
 * (Skylake set), AVX2+FMA and SSE4.1, the int8 and bfloat16 GEMM kernels also for
 * avx512_vnni (AVX-512 with VNNI and BF16 dot products: Zen 4, Sapphire Rapids
 * and later) and amx (that code, plus AMX tiles for prefill of >= 64 rows; chosen
 * only where the OS grants this process the tile state, which the library asks
 * Linux for), and runs the most specialised one the CPU supports, unless an ISA
 * is forced: set HALFORMER_ISA=amx|avx512_vnni|avx512|avx2|sse41|auto before
 * halformer_kernels_init(), or call halformer_force_isa(). A kernel without code
 * for the forced ISA runs the next one below it.
 * An AArch64 library (build-lib --target arm64) has the same functions and
 * arguments, its ISAs neon (ARMv8.0-A) and arm_dot_prod (ARMv8.2-A sdot and
 * fp16, which Linux reports in AT_HWCAP; the int8 GEMMs are compiled for it):
 * HALFORMER_ISA=arm_dot_prod|neon|auto.
 * The GPU libraries hold hf_opencl_<name>() and hf_cuda_<name>() with the same
 * signatures; their buffers live on the device between calls (Halide copies host
 * data over when host_dirty is set and leaves outputs device_dirty: call
 * halide_copy_to_host() before reading them).
 * The GEMM kernels of float32 and int8 (head projections, out projection, FFN,
 * logits; not the bfloat16 ones) and the float32 embedding (its table is laid
 * out as the logits' weight: a tied one is the same buffer) take their weights
 * in panels: a weight of logical extents (in0, in1..., out0, out1...)
 * (PyTorch's [out][in] rows: in0 fastest; a head projection's (d_model, d_k,
 * heads), the out projection's (d_k, heads, d_model), the embedding table's
 * (d_model, vocab)) is a dense buffer of its element type of extents
 *   (g, 16, ceil(in0 / g), in1..., 4 * ceil(out0 / 64), out1...)
 * with g = 4 for int8 and 1 for float32, holding w(i, ..., o, ...) at
 * (i % g, o % 16, i / g, ..., o / 16, ...) and zeros elsewhere: 16 outputs'
 * runs of g consecutive inputs, one 64-byte line, what one vpdpbusd (int8) or
 * one input's FMAs (float32) multiply (halformer/dsl/panels.hpp, pack()).
 * An int8 GEMM weight <w> comes with <w>_step (float32, one per output: the
 * weight's value is w times it) and <w>_sums (int32, one per output: the sum of
 * that output's int8 values over all its inputs). The avx512_vnni and amx code offsets
 * the quantized inputs by 128 to unsigned bytes and subtracts 128 x <w>_sums
 * from each output's sum, so a wrong sum gives wrong outputs there (the other
 * ISAs do not read it).
 * Plain C; needs no Halide installation (HalideRuntime.h ships beside this header). */
#ifndef HALFORMER_KERNELS_H
#define HALFORMER_KERNELS_H

#include "HalideRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

struct halide_filter_metadata_t;

/* Installs the ISA selection, the error handler and, unless
 * halformer_set_num_threads() ran before, the thread pool with HL_NUM_THREADS
 * threads (default: all cores); reads HALFORMER_ISA. Returns 0, or -1 if
 * HALFORMER_ISA names no ISA (see halformer_last_error()). */
int halformer_kernels_init(void);

/* Threads of the CPU kernels' parallel loops, the caller included (0: all cores).
 * They run on halformer's pool (thread_pool.c), whose idle workers spin for
 * HALFORMER_SPIN_US (default 100) microseconds before they sleep, so that the
 * short kernels of a decode step start without waking threads through the OS;
 * HALFORMER_THREAD_POOL=halide keeps Halide's own pool. Also sets Halide's
 * (halide_set_num_threads). Returns 0, or -1 for a count outside 0..256. */
int halformer_set_num_threads(int threads);

/* "auto", "amx", "avx512_vnni", "avx512", "avx2" or "sse41" (AArch64: "auto",
 * "arm_dot_prod" or "neon"). Returns 0, or -1 for another name.
 * Forcing an ISA the CPU lacks falls back to the next one it has. Each kernel
 * chooses its ISA on its first call and keeps it: force before any kernel runs
 * (afterwards a different choice returns -1). */
int halformer_force_isa(const char* isa);

/* The ISA the kernels run now: "amx" or "avx512_vnni" (the kernels compiled for
 * it; the others run avx512), "avx512", "avx2" or "sse41"; AArch64: "arm_dot_prod" (the
 * int8 GEMMs; the others run neon) or "neon". */
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

/* Shape buckets. A CPU kernel may hold a schedule per bucket of shapes: "prefill"
 * (t > 1), "decode" (t = 1, batch > 1) and "decode1" (t = 1, batch = 1), where t
 * and batch are its output's token rows and batch. They are branches inside
 * hf_<name>() (Halide specializations), chosen by the call's extents; every branch
 * computes every shape correctly, only their speed differs. */

/* Kernels by name. Each library lists its kernels (generated by the build):
 * name ("attention"), the entry point taking every argument as a void* in the
 * order of its metadata (buffers as halide_buffer_t*, scalars by address), and
 * the metadata naming each argument with its kind, type and rank. Callers bind
 * arguments by these names (the C++ runtime and tuner do), so an argument can
 * never be passed in another's place. Lists end with a NULL name. */
struct halformer_kernel {
  const char* name;
  int (*argv)(void** args);
  const struct halide_filter_metadata_t* (*metadata)(void);
};
const struct halformer_kernel* halformer_kernels_cpu(void);    /* libhalformer_kernels.a */
const struct halformer_kernel* halformer_kernels_opencl(void); /* libhalformer_kernels_opencl.a */
const struct halformer_kernel* halformer_kernels_cuda(void);   /* libhalformer_kernels_cuda.a */
/* The kernel `name` of `list`, or NULL (then halformer_last_error() lists the names). */
const struct halformer_kernel* halformer_find_kernel(const struct halformer_kernel* list, const char* name);

/* The message of the last kernel error on this thread ("" if none). */
const char* halformer_last_error(void);
void halformer_clear_error(void);

#ifdef __cplusplus
}
#endif

#endif
