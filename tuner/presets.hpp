// Named sets of (kernel, shape) that a model needs, for tuning and comparing.
// The first shape of each kernel is its primary one: the AOT library holds one
// schedule per kernel, and it is the primary shape's tuned record that the
// build uses (export_knobs).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace halformer::tuner {

struct preset_entry {
  std::string kernel, shape; // canonical shape
  bool primary;
};

// "transformer-base": d_model 512, 8 heads, d_ff 2048, vocab 32000; encoder S=128
// (batch 8) and decode steps (t=1, batch 1 and 8).
std::vector<preset_entry> preset(const std::string& name);
std::vector<std::string> preset_names();

} // namespace halformer::tuner
