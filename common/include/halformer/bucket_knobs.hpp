// The knob set a kernel runs with at a shape bucket, as a knob file gives it,
// defined once for the generator (which builds it), the tuner (whose baseline at a
// shape is this set) and the knob export (which writes it out with records over it).
//
// A knob file holds a section's values per ISA ("<section>.<isa>") and, optionally,
// a kernel's own set per shape bucket ("_buckets.<kernel>.<bucket>.<isa>", or ".any"
// for every ISA without its own), whose values replace the section's. A bucket
// without a set of its own runs the section's values: a set is written for the
// bucket it was measured in (a hand set for one-row decode is no claim about
// prefill, and a set tuned at a decode shape holds search values for the prefill
// knobs, which that shape never ran). The generator plans its specialize()
// branches so (schedules/buckets.hpp).
#pragma once

#include "halformer/knob_value.hpp"
#include "halformer/shape_buckets.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>
#include <string>

namespace halformer {

using knob_map = std::map<std::string, int>;

// Integer values of a knob-file object into `values`; keys starting with "_" are
// comments, and values may be machine facts ("cores", "l2_kib/N": knob_value.hpp).
inline void read_knob_values(const nlohmann::json& section, const std::string& where, knob_map& values) {
  for (const auto& [name, v] : section.items())
    if (name.rfind("_", 0) != 0)
      values[name] = knob_value(v, where + "." + name);
}

// A section's values for an ISA; `file` names the knob file in errors.
inline knob_map section_knobs(const nlohmann::json& knobs, const std::string& file, const std::string& section,
                              const std::string& isa) {
  if (!knobs.contains(section) || !knobs[section].contains(isa))
    throw std::runtime_error("knob file '" + file + "' has no section " + section + "." + isa);
  knob_map values;
  read_knob_values(knobs[section][isa], file + ": " + section + "." + isa, values);
  return values;
}

// The key of a kernel's own set at `bucket` for `isa` ("<isa>" or "any"), or "" if
// the file has none.
inline std::string own_bucket_key(const nlohmann::json& knobs, const std::string& kernel, const std::string& bucket,
                                  const std::string& isa) {
  const nlohmann::json::json_pointer at("/_buckets/" + kernel + "/" + bucket);
  if (!knobs.contains(at))
    return "";
  const auto& isas = knobs[at];
  return isas.contains(isa) ? isa : isas.contains("any") ? "any" : "";
}

// Where the kernel's own set at `bucket` on `isa` is, as the JSON pointer
// "/_buckets/<kernel>/<bucket>/<key>", or "" when the section's values apply.
inline std::string bucket_set_pointer(const nlohmann::json& knobs, const std::string& kernel, const std::string& bucket,
                                      const std::string& isa) {
  const std::string key = own_bucket_key(knobs, kernel, bucket, isa);
  return key.empty() ? "" : "/_buckets/" + kernel + "/" + bucket + "/" + key;
}

// The knob set the kernel runs at `bucket` on `isa`: its own set there over the
// section's values, or the section's values alone.
inline knob_map bucket_knobs(const nlohmann::json& knobs, const std::string& file, const std::string& section,
                             const std::string& kernel, const std::string& bucket, const std::string& isa) {
  knob_map values = section_knobs(knobs, file, section, isa);
  if (const std::string at = bucket_set_pointer(knobs, kernel, bucket, isa); !at.empty())
    read_knob_values(knobs[nlohmann::json::json_pointer(at)], file + ": " + at, values);
  return values;
}

} // namespace halformer
