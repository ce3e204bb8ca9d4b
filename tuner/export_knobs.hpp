// The knob file a build uses (the generators' knob_file), from a base knob file
// (the hand defaults, or this hardware's earlier knob file) and this machine's
// records in the schedule database:
// - each (knob section, ISA) takes the tuned record (database.hpp: pick_tuned) at
//   the section's first primary shape that has one, for the knobs that change
//   its calls there, and the knobs of the other phase (prefill or decode steps,
//   knob_phase) from the first shape of that phase that has one; these serve
//   every kernel of the section;
// - each kernel x shape bucket it runs in (kernels.json) takes the tuned record at
//   the first of `shapes` in that bucket, under "_buckets" (schedules/buckets.hpp:
//   each distinct set is a specialize() branch); one without keeps the base's.
//   Algorithm knobs (one value per pipeline) are the section's, chosen from the
//   value sets measured in every bucket its kernels run in (the base file's
//   values without one): the section and each bucket adopt only records
//   measured with those values.
// Another machine's records are never used; the report says what was tuned, and
// "_source" in the file says which hardware, base and shapes it came from.
#pragma once

#include "database.hpp"
#include "hardware.hpp"
#include "presets.hpp"

#include "halformer/shape_buckets.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace halformer::tuner {

struct export_report {
  std::vector<std::string> tuned;      // "section.isa (kernel shape: 1.23 ms)", "kernel@bucket.isa (...)"
  std::vector<std::string> defaulted;  // "section.isa"
  std::vector<std::string> unplanned;  // shapes in a bucket the kernel has no knob set for
  std::vector<std::string> algorithms; // "section.isa: knob=value,...": algorithm values measured in every bucket
  // Sections this hardware has tuned records of, all measured with earlier revisions
  // of their schedule (a change to its files retired them): "section (revisions 3, 5; now 9)".
  std::vector<std::string> retired;
};

// Per knob section, the phase of each knob (knob_spaces.json); a knob not
// listed changes every call.
using section_phases = std::map<std::string, std::map<std::string, knob_phase>>;
inline knob_phase phase_of(const section_phases& phases, const std::string& section, const std::string& knob) {
  const auto s = phases.find(section);
  if (s == phases.end())
    return knob_phase::any;
  const auto k = s->second.find(knob);
  return k == s->second.end() ? knob_phase::any : k->second;
}

// The shape buckets a kernel has knob sets for, and its knob section.
struct bucket_plan {
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
// `algorithm_knobs`: per knob section, the knobs that shape the algorithm;
// `phases`: the calls each knob changes.
export_report export_knobs(const std::string& base_knob_file, const database& db, const hardware& hw,
                           const std::vector<preset_entry>& shapes, const std::string& out_file,
                           const std::map<std::string, int>& revisions,
                           const std::map<std::string, bucket_plan>& plans = {},
                           const std::map<std::string, std::set<std::string>>& algorithm_knobs = {},
                           const section_phases& phases = {});

} // namespace halformer::tuner
