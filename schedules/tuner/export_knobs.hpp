// Knob values for a build: the default knob file with each (knob section, ISA)
// replaced by the fastest verified database record for this machine at the
// section's primary kernel and shape (presets.hpp). Sections without such a
// record keep their defaults, and the report says so: another machine's records
// are never used.
#pragma once

#include "database.hpp"
#include "hardware.hpp"

#include <map>
#include <string>
#include <vector>

namespace halformer::tuner {

struct export_report {
  std::vector<std::string> tuned, defaulted; // "section.isa (kernel shape: 1.23 ms)" / "section.isa"
};

// Only knob-set records are adopted. Autoscheduler records are measured as
// candidates and baselines but never built in: their schedules are sized by the
// estimates and fail at smaller shapes (Adams2019's LayerNorm tuned at d_model
// 512 reads out of bounds at d_model 10, tests/tuner), while a library must run
// every shape.
// `revisions`: each knob section's current schedule revision; records measured with
// another revision are ignored (a missing section counts as revision 1).
export_report export_knobs(const std::string& default_knob_file, const database& db, const hardware& hw,
                           const std::string& preset_name, const std::string& out_file,
                           const std::map<std::string, int>& revisions);

} // namespace halformer::tuner
