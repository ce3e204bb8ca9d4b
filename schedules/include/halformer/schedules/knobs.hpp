// Named schedule knobs: declared in C++ (name, allowed values, why), valued by data.
//
// Each schedule declares its knobs; values come from a JSON knob file (one per
// hardware family, `schedules/knobs/*.json`, later the tuner's database) and may be
// overridden one by one ("rows:4/vectors:2"), which is how the tuner builds
// candidates without touching code. A value outside its declared domain, an
// unknown knob or a missing one is a build error naming it.
#pragma once

#include "halformer/bucket_knobs.hpp"
#include "halformer/shape_buckets.hpp"

#include <Halide.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace halformer::schedules {

struct knob_decl {
  std::string name;
  std::vector<int> allowed; // the search space the tuner explores
  std::string meaning;
  bool algorithm = false;             // shapes the algorithm, not only its schedule (one value per pipeline)
  knob_phase phase = knob_phase::any; // the calls it changes (shape_buckets.hpp)
};

// The knob-file section a target reads: its widest x86 vector ISA, "neon" on
// AArch64 (schedules/knobs/arm-64.json), or its GPU API.
inline std::string isa_class(const Halide::Target& t) {
  if (t.has_feature(Halide::Target::CUDA))
    return "cuda";
  if (t.has_feature(Halide::Target::OpenCL))
    return "opencl";
  if (t.has_feature(Halide::Target::AVX512_Skylake))
    return "avx512";
  if (t.has_feature(Halide::Target::AVX2))
    return "avx2";
  if (t.has_feature(Halide::Target::SSE41))
    return "sse41";
  if (t.arch == Halide::Target::ARM && t.bits == 64)
    return "neon";
  return "generic";
}

class knob_values {
public:
  knob_values() = default;
  knob_values(std::string kernel, std::vector<knob_decl> decls, std::map<std::string, int> values)
      : kernel_(std::move(kernel)), decls_(std::move(decls)), values_(std::move(values)) {
    for (const auto& d : decls_) {
      auto v = values_.find(d.name);
      if (v == values_.end())
        throw std::runtime_error(kernel_ + ": knob '" + d.name + "' has no value");
      if (std::find(d.allowed.begin(), d.allowed.end(), v->second) == d.allowed.end())
        throw std::runtime_error(kernel_ + ": knob '" + d.name + "' = " + std::to_string(v->second) +
                                 " is outside its declared values");
    }
    for (const auto& [name, value] : values_)
      if (std::none_of(decls_.begin(), decls_.end(), [&](const knob_decl& d) { return d.name == name; }))
        throw std::runtime_error(kernel_ + ": unknown knob '" + name + "'");
  }
  int operator[](const std::string& name) const {
    auto v = values_.find(name);
    if (v == values_.end())
      throw std::logic_error(kernel_ + ": schedule reads undeclared knob '" + name + "'");
    return v->second;
  }
  const std::map<std::string, int>& all() const { return values_; }

private:
  std::string kernel_;
  std::vector<knob_decl> decls_;
  std::map<std::string, int> values_;
};

// "a:1/b:2" (or "a=1,b=2") -> {a: 1, b: 2}. Generator command lines take no '=' or
// ',' inside a value, hence the first spelling, which the tuner uses.
inline std::map<std::string, int> parse_overrides(const std::string& text) {
  std::map<std::string, int> out;
  std::string items = text;
  std::replace(items.begin(), items.end(), '/', ',');
  std::stringstream ss(items);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty())
      continue;
    const auto eq = item.find_first_of("=:");
    if (eq == std::string::npos)
      throw std::runtime_error("knob override '" + item + "' is not name:value");
    try {
      std::size_t used = 0;
      const std::string value = item.substr(eq + 1);
      out[item.substr(0, eq)] = std::stoi(value, &used);
      if (used != value.size())
        throw std::invalid_argument(value);
    } catch (const std::exception&) {
      throw std::runtime_error("knob override '" + item + "' has a non-integer value");
    }
  }
  return out;
}

namespace detail {
inline nlohmann::json read_knob_file(const std::string& knob_file) {
  std::ifstream in(knob_file);
  if (!in)
    throw std::runtime_error("cannot open knob file '" + knob_file + "'");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error("knob file '" + knob_file + "' is not valid JSON: " + e.what());
  }
}
} // namespace detail

// A kernel's knob sets: the section's (`general`) and, where the knob file has
// them, one per shape bucket (_buckets.<kernel>.<bucket>.<isa>, or .any for every
// ISA without its own: values that replace the section's; buckets.hpp makes each
// distinct set a specialize() branch).
// Overrides (a tuner candidate) are one knob set for every shape: no bucket sets.
struct kernel_knobs {
  knob_values general;
  std::map<std::string, knob_values> by_bucket;
};
inline kernel_knobs load_kernel_knobs(const std::string& kernel, const std::string& section,
                                      const std::vector<knob_decl>& decls, const Halide::Target& target,
                                      const std::string& knob_file, const std::string& overrides) {
  // The section's values for the target's ISA class, then the overrides.
  const std::string isa = isa_class(target);
  std::map<std::string, int> values;
  nlohmann::json j;
  if (!knob_file.empty()) {
    j = detail::read_knob_file(knob_file);
    values = section_knobs(j, knob_file, section, isa);
  }
  for (const auto& [name, v] : parse_overrides(overrides))
    values[name] = v;
  kernel_knobs k{knob_values(section, decls, values), {}};
  if (knob_file.empty() || !overrides.empty() || !j.contains("_buckets") || !j["_buckets"].contains(kernel))
    return k;
  for (const auto& [bucket, isas] : j["_buckets"][kernel].items()) {
    if (bucket.rfind("_", 0) == 0)
      continue; // comments
    if (std::find(bucket_names().begin(), bucket_names().end(), bucket) == bucket_names().end())
      throw std::runtime_error(knob_file + ": _buckets." + kernel + "." + bucket + " is not a shape bucket (" +
                               bucket_list() + ")");
    if (!bucket_set_pointer(j, kernel, bucket, isa).empty())
      k.by_bucket.emplace(
          bucket, knob_values(kernel + "@" + bucket, decls, bucket_knobs(j, knob_file, section, kernel, bucket, isa)));
  }
  return k;
}

} // namespace halformer::schedules
