// Seeding a search on hardware without records from the most similar hardware
// that has some (tuner.hpp: seeds_from_similar_hardware).
#include "tuner.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

namespace halformer::tuner {

namespace {
// A CPU hardware key "cpu|features|cores" in parts (GPU keys carry more parts).
struct cpu_identity {
  std::string cpu;
  std::set<std::string> features;
  int cores = 0;
  bool cpu_only = false;
};
cpu_identity parse_key(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream in(key);
  for (std::string p; std::getline(in, p, '|');)
    parts.push_back(p);
  cpu_identity id;
  if (parts.size() != 3)
    return id;
  id.cpu = parts[0], id.cpu_only = true;
  std::stringstream f(parts[1]);
  for (std::string w; std::getline(f, w, ',');)
    id.features.insert(w);
  try {
    id.cores = std::stoi(parts[2]);
  } catch (const std::exception&) {
    id.cpu_only = false;
  }
  return id;
}

// Larger is more similar: same target, then shared vector features (Jaccard), then
// the same CPU name, then the nearest core count.
std::tuple<bool, double, bool, int> similarity(const record& r, const std::string& target, const cpu_identity& here) {
  const cpu_identity there = parse_key(r.hardware);
  std::size_t common = 0;
  for (const auto& f : there.features)
    common += here.features.count(f);
  const std::size_t all = here.features.size() + there.features.size() - common;
  return {r.target == target, all ? double(common) / double(all) : 1.0, there.cpu == here.cpu,
          -std::abs(there.cores - here.cores)};
}

bool inside(const knob_set& k, const knob_space& space) {
  if (k.size() != space.size())
    return false;
  for (const auto& [name, values] : space) {
    const auto v = k.find(name);
    if (v == k.end() || std::find(values.begin(), values.end(), v->second) == values.end())
      return false;
  }
  return true;
}
} // namespace

std::vector<seed> seeds_from_similar_hardware(const std::vector<record>& records, const kernel_info& k,
                                              const std::string& shape, const std::string& target,
                                              const std::string& this_hardware, const knob_space& space,
                                              std::size_t n) {
  const cpu_identity here = parse_key(this_hardware);
  std::vector<const record*> donors; // verified knob-set records of this kernel and shape, elsewhere
  for (const auto& r : records)
    if (r.kernel == k.name && r.shape == shape && r.schedule_revision == k.revision && r.hardware != this_hardware &&
        r.verified() && parse_key(r.hardware).cpu_only && autoscheduler_of(r.knobs).empty() && inside(r.knobs, space))
      donors.push_back(&r);
  if (donors.empty() || !here.cpu_only)
    return {};
  const auto closest = *std::max_element(donors.begin(), donors.end(), [&](const record* a, const record* b) {
    return similarity(*a, target, here) < similarity(*b, target, here);
  });
  std::vector<record> theirs; // the most similar hardware's records, at its target
  for (const record* r : donors)
    if (r->hardware == closest->hardware && r->target == closest->target)
      theirs.push_back(*r);
  std::vector<seed> out;
  while (out.size() < n) {
    const record* best = pick_tuned(theirs, [&](const record& r) {
      return std::none_of(out.begin(), out.end(), [&](const seed& s) { return s.knobs == r.knobs; });
    });
    if (!best)
      break;
    out.push_back({best->knobs, best->hardware});
  }
  return out;
}

} // namespace halformer::tuner
