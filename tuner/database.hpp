// The schedule database: JSON lines (DIR/schedules.jsonl), one record per measured
// candidate: kernel, shape, dtype, Halide target, hardware identity, versions,
// knob values, status (verified or why not), median/min/max time, GFLOP/s, GB/s,
// and the measurement settings. Lookups are exact on the hardware identity.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace halformer::tuner {

struct record {
  std::string kernel, knob_section, shape, dtype = "f32", target, hardware, halformer_version, halide_version;
  std::map<std::string, int> knobs;
  int schedule_revision = 1; // the schedule code's revision when measured (records before revisions: 1)
  // ok | wrong | kernel_error | compile_error | link_error | crash | timeout (the per-step limit) |
  // over_budget (stopped at the end of the tuning budget: not a verdict on the candidate)
  std::string status;
  std::string source; // default | seed | random | mutation | enumeration | autoscheduler:<name> | confirm
  double median_ms = 0, min_ms = 0, max_ms = 0, gflops = 0, gbps = 0, max_error = 0;
  nlohmann::json settings;
  std::string detail, when;

  bool verified() const { return status == "ok"; }
  // A confirmation record: the finalists of a search re-measured side by side over
  // several rounds (tuner.cpp), free of the search's winner's curse.
  bool confirmed() const { return source == "confirm"; }
  // The record its confirmation round chose for the build.
  bool chosen() const { return confirmed() && settings.is_object() && settings.value("chosen", false); }
  nlohmann::json to_json() const;
  static record from_json(const nlohmann::json& j, const std::string& where);
};

class database {
public:
  explicit database(std::string dir);
  const std::string& file() const { return file_; }
  std::vector<record> load() const; // throws halformer::error naming a malformed line
  void append(const record& r) const;
  // Rewrites the database with only the records `keep` accepts, each line as it
  // was (a new file renamed over the old, so a failure leaves the old intact);
  // returns the records dropped.
  std::size_t keep_only(const std::function<bool(const record&)>& keep) const;
  // The tuned record for exactly this kernel, shape, target and hardware (pick_tuned).
  std::optional<record> best(const std::string& kernel, const std::string& shape, const std::string& target,
                             const std::string& hardware) const;

private:
  void each_line(const std::function<void(const std::string&, record)>& visit) const;
  std::string dir_, file_;
};

// The tuned record among `records` that `usable` accepts, by the strength of
// the evidence:
// 1. the record a confirmation round chose (the latest round's): its finalists
//    and the default measured side by side, the default kept unless beaten by
//    more than the noise margin (tuner.cpp);
// 2. else the fastest verified confirmation record;
// 3. else the fastest verified record (a search keeps its luckiest measurement,
//    so among many close candidates the lowest search median overstates).
template <class Usable> const record* pick_tuned(const std::vector<record>& records, Usable&& usable) {
  const auto rank = [](const record& r) { return r.chosen() ? 2 : r.confirmed() ? 1 : 0; };
  const record* best = nullptr;
  for (const auto& r : records)
    if (r.verified() && usable(r)) {
      bool better = !best || rank(r) > rank(*best);
      if (best && rank(r) == rank(*best))
        better = r.chosen() ? r.when > best->when : r.median_ms < best->median_ms;
      if (better)
        best = &r;
    }
  return best;
}

// The shape bucket (halformer/shape_buckets.hpp) of a canonical shape, by its t and
// batch (1 where the shape has none).
std::string bucket_of(const std::string& shape);

// A canonical shape's values by name ("batch=8,t=128" -> {batch: 8, t: 128}).
std::map<std::string, int> shape_values(const std::string& shape);

// "b=8,t=128" with keys sorted: the canonical spelling of a shape.
std::string canonical_shape(const std::string& shape);

} // namespace halformer::tuner
