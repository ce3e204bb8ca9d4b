// Model weights, repacked once from PyTorch's state_dict into the kernels' layouts
// (README, "Kernels"), under the names dsl/layers.hpp gives them.
//
// Every GEMM weight keeps PyTorch's row order [out][in], the dot-product layout
// ((d_model, d_k, heads) for a head projection, (d_k, heads, d_model) for the out
// projection): float32 ones stored in panels (dsl/panels.hpp), as are float32
// embedding tables (a tied table is the generator's buffer). int8 GEMMs
// (dsl/gemm_steps.hpp): quantized per output row (step max |w| / 127, values
// rounded half to even), in panels, steps under "<name>.step" and value sums under "<name>.sums"; only the int8
// values stay resident; int8 embedding tables likewise, per token (a step per
// entry; a tied table is the generator's buffers). bfloat16 GEMMs: rounded to bfloat16 (nearest even), in
// rows, no steps; embedding tables stay float32 panels (a tied generator is then
// held twice: float32 table, bfloat16 rows). Biases and norms stay float32.
#pragma once

#include "halformer/config.hpp"
#include "safetensors.hpp"

#include <HalideBuffer.h>

#include <map>
#include <span>
#include <string>
#include <vector>

namespace halformer {

using fbuffer = Halide::Runtime::Buffer<float>;
using ibuffer = Halide::Runtime::Buffer<int32_t>;
using weight_buffer = Halide::Runtime::Buffer<>; // float32, int8 or bfloat16

// One layer's tensors ("self_attn.w_q", "norm1.weight", "linear1.weight", ...).
using layer_tensors = std::map<std::string, weight_buffer>;

// The element type of the model's GEMM weights.
enum class gemm_weights { float32, int8, bfloat16 };

struct model_weights {
  gemm_weights gemms = gemm_weights::float32;
  // Embeddings ("src_embed", "tgt_embed"), final norms ("encoder_norm.weight", ...)
  // and the generator ("generator.weight", "generator.bias").
  layer_tensors top;
  std::vector<layer_tensors> encoder, decoder;

  // The layers are repacked in parallel, on the kernels' thread pool.
  static model_weights load(const safetensors_file& file, const model_config& config,
                            gemm_weights gemms = gemm_weights::float32);
  std::size_t bytes() const; // resident weight bytes
};

// PyTorch [out][in] rows quantized symmetrically per row: step max |row| / 127,
// values round(w / step) (half to even) within +-127; a zero row has step 0.
struct quantized_rows {
  std::vector<int8_t> values; // [out][in]
  std::vector<float> steps;   // [out]
};
quantized_rows quantize_rows(std::span<const float> w, int out, int in);
// The same steps, with their inverses (0 for a zero row), and one value: the
// loader quantizes with these as it packs.
struct quantized_row_steps {
  std::vector<float> steps, inverses; // [out]
};
quantized_row_steps row_steps(std::span<const float> w, int out, int in);
int8_t quantized_value(float w, float inverse);

} // namespace halformer
