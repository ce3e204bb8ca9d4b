// Where each tensor the runtime needs lies in a model file: one table per format
// (docs/model-format.md, "Adding a format"). The runtime asks for tensors by its
// own names:
//   src_embed, tgt_embed, generator.weight, generator.bias,
//   encoder_norm.{weight,bias}, decoder_norm.{weight,bias},
//   <encoder|decoder>.<layer>.<self_attn|cross_attn>.<q|k|v|o>.<weight|bias>,
//   <encoder|decoder>.<layer>.<fc1|fc2>.<weight|bias>,
//   <encoder|decoder>.<layer>.norm<1|2|3>.<weight|bias>
// (norm1 after self-attention, norm2 after cross-attention in a decoder and after
// the FFN in an encoder, norm3 after a decoder's FFN). Weights are PyTorch's
// [out][in] rows.
#pragma once

#include "halformer/config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace halformer {

struct tensor_source {
  // Stored names in order of preference: the first the file holds is read (a
  // checkpoint stores tied weights once, under one of their names).
  std::vector<std::string> names;
  // The stored tensor's shape when it differs from the one asked for: the tensor
  // is then rows first_row .. first_row + (rows asked for) - 1 of it (the fused
  // in_proj of nn.MultiheadAttention), or the same values with leading 1s
  // (transformers' final_logits_bias [1, vocab]).
  std::vector<std::int64_t> stored_shape;
  int first_row = 0;
  // The tensor is the leading rows of a stored one that may have more (a decoder
  // table transformers sizes by the source vocabulary; the target's ids are fewer).
  bool leading_rows = false;
  // A file without any of `names` holds zeros for it (M2M100's logits have no bias).
  bool zeros_if_absent = false;
};

// `name` (the runtime's) in `config.format`'s table.
tensor_source tensor_source_of(const model_config& config, const std::string& name);

} // namespace halformer
