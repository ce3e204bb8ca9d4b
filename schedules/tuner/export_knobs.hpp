// Knob values for a build: the default knob file with each (knob section, ISA)
// replaced by the fastest verified database record for this machine at the
// section's primary kernel and shape (presets.hpp). Sections without such a
// record keep their defaults, and the report says so: another machine's records
// are never used.
#pragma once

#include "database.hpp"
#include "hardware.hpp"

#include <string>
#include <vector>

namespace halformer::tuner {

struct export_report {
  std::vector<std::string> tuned, defaulted; // "section.isa (kernel shape: 1.23 ms)" / "section.isa"
};

export_report export_knobs(const std::string& default_knob_file, const database& db, const hardware& hw,
                           const std::string& preset_name, const std::string& out_file);

} // namespace halformer::tuner
