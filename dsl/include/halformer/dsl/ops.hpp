// The nodes of the tensor-expression graph (expr.hpp) without their operands:
// the element types and, per operation, what it computes and the name of the
// stage it lowers to.
#pragma once

#include <string>

namespace halformer::dsl {

enum class dtype { f32, i32, i8, bf16, f16, boolean };
constexpr const char* dtype_name(dtype d) {
  return d == dtype::f32    ? "float32"
         : d == dtype::i32  ? "int32"
         : d == dtype::i8   ? "int8"
         : d == dtype::bf16 ? "bfloat16"
         : d == dtype::f16  ? "float16"
                            : "bool";
}
constexpr int dtype_bytes(dtype d) {
  return d == dtype::f32 || d == dtype::i32 ? 4 : d == dtype::bf16 || d == dtype::f16 ? 2 : 1;
}

// Every operation carries the name of the stage it lowers to; schedules refer to
// stages by these names, so they are part of a kernel's interface.
namespace op {
struct input {
  std::string name;
  dtype type = dtype::f32;
  int panel_inputs = 0; // a GEMM weight in panels (panel_input): its leading input dims
};
struct output { // a kernel's output, by its name in the kernel's outputs() (layer wiring only)
  std::string name;
  dtype type = dtype::f32;
};
struct param { // a scalar argument (eps, a flag, an offset)
  std::string name;
  dtype type = dtype::f32;
  std::string extent_of; // extent_param: the dimension whose extent it is ("" for other scalars)
};
// What a contraction's optional third operand is.
enum class contract_third {
  none,
  bias,             // the float32 sums' start (linear)
  int8_weight_sums, // the int8 weights' sums per output (int8_contract)
};
struct contract { // sum over the dimensions shared by both operands and absent from the result
  std::string name;
  contract_third third = contract_third::none;
};
struct transpose {
  std::string name;
};
struct add {
  std::string name;
};
struct add_broadcast {
  std::string name;
};
struct scale {
  std::string name;
};
enum class activation { relu, gelu, silu }; // silu = swish: x sigmoid(x)
struct unary {
  std::string name;
  activation fn;
};
struct softmax { // over dim 0, masked by key lengths and an optional causal rule
  std::string name;
  bool log = false;
};
struct layernorm { // over dim 0
  std::string name;
};
struct gather { // embedding rows by token id (an int8 table's rows times their steps)
  std::string name;
};
// PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...) (interleaved, the
// paper's layout), or with a true `split` scalar the sines in the first ceil(d/2)
// features and the cosines after them (Marian's and fairseq's layout).
struct sinusoidal {
  std::string name;
};
struct attention { // softmax(q.k / sqrt(d_k), masked) . v, over all heads and batch rows
  std::string name;
};
struct argmax { // the index (int32) of the largest element along dim 0; ties: the lowest index
  std::string name;
};
struct max_log_prob { // along dim 0: log softmax of the largest element = -log(sum exp(x - max))
  std::string name;
};
struct chunk_max { // along dim 0: the largest of every `size` consecutive elements (the last chunk may be short)
  std::string name;
  int size;
};
// Random sampling's token along dim 0 of logits (lower_sampling.hpp): the
// repetition penalty and bans applied, top-k then top-p at a temperature, drawn by
// the row's uniform number; a row's forced token, where it has one, instead.
struct sample_token {
  std::string name;
};
// The log-probability (temperature 1, the penalty applied, normalized over the
// whole vocabulary) of each row's token along dim 0.
struct token_log_prob {
  std::string name;
};
struct quant_step { // along dim 0: max |x| / 127, the step of a row's symmetric int8 quantization
  std::string name;
};
struct quantize { // clamp(round_half_even(x * (1 / step)), -127, 127); a zero row (step 0) gives zeros
  std::string name;
};
struct to_bfloat16 { // float32 rounded to bfloat16, to nearest even (as vcvtneps2bf16)
  std::string name;
};
struct to_float16 { // float32 rounded to float16, to nearest even, saturating at +-65504 (never infinite)
  std::string name;
};
struct dequantize { // an int32 accumulation times its row's step and its column's step
  std::string name;
};
} // namespace op

} // namespace halformer::dsl
