// The kernels a model runs, as one table per device: the CPU library's hf_*, the
// OpenCL library's hf_opencl_* and the CUDA library's hf_cuda_* share signatures
// (same generators, different schedules), so the executor calls through a table.
#pragma once

#include "hf_all.h"
#if HALFORMER_GPU
#include "hf_all_cuda.h"
#include "hf_all_opencl.h"
#endif

#include <string>

namespace halformer {

enum class device { cpu, opencl, cuda };

struct kernel_table {
  decltype(&hf_embedding) embedding;
  decltype(&hf_qkv_projection) qkv_projection;
  decltype(&hf_kv_projection) kv_projection;
  decltype(&hf_q_projection) q_projection;
  decltype(&hf_attention) attention;
  decltype(&hf_out_projection) out_projection;
  decltype(&hf_ffn_relu) ffn_relu;
  decltype(&hf_ffn_gelu) ffn_gelu;
  decltype(&hf_layernorm) layernorm;
  decltype(&hf_log_softmax) log_softmax;
  decltype(&hf_logits) logits;
  decltype(&hf_greedy_pick) greedy_pick;
};

#define HALFORMER_KERNEL_TABLE(p)                                                                                      \
  kernel_table {                                                                                                       \
    p##embedding, p##qkv_projection, p##kv_projection, p##q_projection, p##attention, p##out_projection, p##ffn_relu,  \
        p##ffn_gelu, p##layernorm, p##log_softmax, p##logits, p##greedy_pick                                           \
  }

inline const kernel_table& kernels_of(device d) {
  static const kernel_table cpu = HALFORMER_KERNEL_TABLE(hf_);
#if HALFORMER_GPU
  static const kernel_table opencl = HALFORMER_KERNEL_TABLE(hf_opencl_);
  static const kernel_table cuda = HALFORMER_KERNEL_TABLE(hf_cuda_);
  if (d == device::opencl)
    return opencl;
  if (d == device::cuda)
    return cuda;
#endif
  return cpu;
}

inline const char* device_name(device d) { return d == device::cpu ? "cpu" : d == device::cuda ? "cuda" : "opencl"; }

} // namespace halformer
