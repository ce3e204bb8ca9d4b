// Knob values for a build, from the default knob file and this machine's records:
// - each (knob section, ISA) takes the tuned record (database.hpp: pick_tuned) at
//   the section's first primary preset shape that has one, its decode GEMV knobs
//   from the one-row decode shape's; these serve every kernel of the section;
// - each kernel variant (kernel x shape bucket, declared by the build: kernels.json)
//   takes the tuned record at the preset shape of its bucket, under "_variants";
//   a variant without one keeps its section's values.
// Another machine's records are never used; the report says what was tuned.
#pragma once

#include "database.hpp"
#include "hardware.hpp"

#include <map>
#include <string>
#include <vector>

namespace halformer::tuner {

struct export_report {
  std::vector<std::string> tuned;     // "section.isa (kernel shape: 1.23 ms)", "kernel@bucket.isa (...)"
  std::vector<std::string> defaulted; // "section.isa"
  std::vector<std::string> unvariant; // preset shapes whose bucket the kernel has no variant for
};

// The variants the build compiles for a kernel: its knob section and buckets.
struct variant_plan {
  std::string section;
  std::vector<std::string> buckets;
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
                           const std::map<std::string, int>& revisions,
                           const std::map<std::string, variant_plan>& variants = {});

} // namespace halformer::tuner
