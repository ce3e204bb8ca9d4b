// The CLI's commands beyond running a model: tuning and comparing schedules
// (through tuner/), and `info`.
#pragma once

#include "compare.hpp"
#include "halformer/model.hpp"
#include "tuner.hpp"

#include <string>

namespace halformer::cli {

// "90s", "5m", "1h" (or plain seconds) -> seconds.
double seconds_of(const std::string& text);
// The ISA to tune or compare: this CPU's best unless one is asked for.
std::string resolve_isa(const std::string& asked);
struct tune_request {
  std::string kernel, preset, model_dir; // what to tune: one kernel (with --shape), a preset, or a model
  int prefill_tokens = 128, batch = 8;   // a model's shapes: prefill length and batch
  std::string budget = "5m", db_dir;     // budget: per kernel/shape pair
  std::string total_budget;              // else: the whole run's, shared evenly by the pairs
  std::string knob_file; // where to write the knob file (default: this hardware's in schedules/knobs/tuned)
  std::string compute_type = "float32"; // a preset's or model's GEMMs: float32 or int8 (their *_int8 kernels)
  bool prune_retired = false;           // instead: drop the database's records no build can use
};
int tune(const tune_request& r, tuner::tune_options o);
int compare(tuner::compare_options o, const std::string& schedules, const std::string& out_dir, bool all,
            const std::string& preset_name, const std::string& compute_type = "float32");
// The ISA, devices, every kernel's schedule and knob values, Halide's version,
// and the model's shape when `dir` names one.
void print_info(const std::string& dir, const load_options& lo);

} // namespace halformer::cli
