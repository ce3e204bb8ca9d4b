// The (kernel, shape) pairs a model runs, for tuning and comparing: a preset is a
// model's dimensions at a prefill length and batch, and a model directory's
// config.json gives another (`tune --model DIR`). The first shape of each kernel is
// its primary one: its knob section takes that shape's tuned record; every shape's
// record becomes its kernel's knob set for the shape's bucket (export_knobs).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace halformer::tuner {

struct preset_entry {
  std::string kernel, shape; // canonical shape
  bool primary;
  // The kernel's share of a model's run, spread over its shapes: how a tune's
  // total budget is divided (budget_shares).
  double weight = 1;
};

struct model_dims {
  int d_model, heads, d_ff, src_vocab, tgt_vocab;
  std::string activation; // relu | gelu | silu
};
model_dims transformer_base(); // d_model 512, 8 heads, d_ff 2048, vocab 32000, relu

// A model's kernels at prefill (t = prefill_t, batch) and at decode steps (t = 1,
// batch and 1, attending to prefill_t keys).
std::vector<preset_entry> model_shapes(const model_dims& m, int prefill_t, int batch);

// The same run with int8 or bfloat16 GEMMs ("int8", "bfloat16"; "float32" gives
// `float32` back): the GEMM kernels' *_int8 (*_bf16) variants, each at one shape
// (they take one knob set: no buckets), its decode step at the batch when it has
// one (these types serve decoding, which streams the weights), else its prefill;
// and attention's decode steps as attention_f16kv's (the float16 caches such a
// model keeps on the CPU), the batch's step its section's.
std::vector<preset_entry> typed_shapes(const std::vector<preset_entry>& float32, const std::string& compute_type);

// A total budget (seconds) divided over `jobs`: a quarter evenly, so that every
// pair measures its default and a few candidates, the rest by the jobs' weights.
std::vector<double> budget_shares(const std::vector<preset_entry>& jobs, double total_s);

// "transformer-base": model_shapes(transformer_base(), 128, 8).
std::vector<preset_entry> preset(const std::string& name);
std::vector<std::string> preset_names();

} // namespace halformer::tuner
