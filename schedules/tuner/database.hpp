// The schedule database: JSON lines (DIR/schedules.jsonl), one record per measured
// candidate: kernel, shape, dtype, Halide target, hardware identity, versions,
// knob values, status (verified or why not), median/min/max time, GFLOP/s, GB/s,
// and the measurement settings. Lookups are exact on the hardware identity.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace halformer::tuner {

struct record {
  std::string kernel, knob_section, shape, dtype = "f32", target, hardware, halformer_version, halide_version;
  std::map<std::string, int> knobs;
  int schedule_revision = 1; // the schedule code's revision when measured (records before revisions: 1)
  std::string status;        // ok | wrong | kernel_error | compile_error | link_error | crash | timeout
  std::string source;        // default | random | mutation | autoscheduler:<name>
  double median_ms = 0, min_ms = 0, max_ms = 0, gflops = 0, gbps = 0, max_error = 0;
  nlohmann::json settings;
  std::string detail, when;

  bool verified() const { return status == "ok"; }
  nlohmann::json to_json() const;
  static record from_json(const nlohmann::json& j, const std::string& where);
};

class database {
public:
  explicit database(std::string dir);
  const std::string& file() const { return file_; }
  std::vector<record> load() const; // throws halformer::error naming a malformed line
  void append(const record& r) const;
  // The fastest verified record for exactly this kernel, shape, target and hardware.
  std::optional<record> best(const std::string& kernel, const std::string& shape, const std::string& target,
                             const std::string& hardware) const;

private:
  std::string dir_, file_;
};

// A canonical shape's values by name ("batch=8,t=128" -> {batch: 8, t: 128}).
std::map<std::string, int> shape_values(const std::string& shape);

// "b=8,t=128" with keys sorted: the canonical spelling of a shape.
std::string canonical_shape(const std::string& shape);

} // namespace halformer::tuner
