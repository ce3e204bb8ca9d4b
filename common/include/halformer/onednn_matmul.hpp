// oneDNN's matmul primitive as the peer of a GEMM kernel of the same type:
// float32 (f32 x f32 -> f32), int8 (u8 activations x s8 weights -> exact s32
// sums) or bfloat16 (bf16 x bf16 -> f32), on the GEMMs the kernel performs
// (problems::problem::gemms). The weights are in the layout oneDNN chooses for
// the primitive (format `any`, reordered once, as an inference engine packs its
// weights at load) and rotated over copies of timing::rotation_bytes() in all,
// so that they come from memory as the kernels' do; the activations are one
// copy, in cache. oneDNN picks its own ISA (AMX where the CPU has it): impl()
// names the implementation each GEMM ran, e.g. "brg:avx512_core_bf16".
// matmul_work::fused gives each GEMM its kernel's epilogue as well (bias,
// activation, residual; int8: the sums scaled per output to float32), and
// chains the FFN's GEMMs through a hidden layer of the compute type (int8: u8
// requantized with one fixed scale). Left out, so that the peer does a little
// less than the kernels: the int8 kernels' per-row input steps (the multiply in
// their dequantization, and their hidden layer's steps: oneDNN 2.6's brgemm
// takes no per-row binary post-op and falls back to its reference code) and
// every kernel's quantization or rounding of its float32 input.
#pragma once

#include "halformer/gemm_epilogue.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace halformer::onednn {

enum class matmul_type { f32, u8s8, bf16 };
enum class matmul_work { bare, fused };

// The type of a kernel's GEMMs from its name: *_int8 u8s8, *_bf16 bf16, else
// f32 (inline: `compare` names the type without linking oneDNN).
inline matmul_type matmul_type_of(const std::string& kernel) {
  return kernel.ends_with("_int8")   ? matmul_type::u8s8
         : kernel.ends_with("_bf16") ? matmul_type::bf16
                                     : matmul_type::f32;
}
inline const char* to_string(matmul_type t) { // blas_harness's --matmul names
  return t == matmul_type::u8s8 ? "u8s8s32" : t == matmul_type::bf16 ? "bf16" : "f32";
}

using matmul_dims = gemm_shape;

class matmul_set {
public:
  // Throws std::runtime_error naming the GEMM oneDNN could not create a primitive for.
  matmul_set(const std::vector<matmul_dims>& gemms, matmul_type type, matmul_work work = matmul_work::bare);
  ~matmul_set();
  matmul_set(matmul_set&&) noexcept;
  matmul_set& operator=(matmul_set&&) noexcept;
  void run();               // every GEMM once, on the next copy of the weights
  std::string impl() const; // the implementations, one per distinct GEMM, joined by ", "
  double flops() const;

private:
  struct state;
  std::unique_ptr<state> s_;
};

} // namespace halformer::onednn
