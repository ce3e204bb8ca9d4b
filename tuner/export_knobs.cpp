#include "export_knobs.hpp"

#include "halformer/bucket_knobs.hpp"
#include "halformer/error.hpp"
#include "tuner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

namespace halformer::tuner {

namespace {

// A knob-set record of `section` measured here, now, at (kernel, shape) on `isa`.
struct usable_at {
  const hardware& hw;
  const std::map<std::string, int>& revisions;
  // A section the catalog does not list counts as revision 1 (export_knobs.hpp).
  int revision_of(const std::string& section) const {
    const auto it = revisions.find(section);
    return it == revisions.end() ? 1 : it->second;
  }
  bool operator()(const record& r, const std::string& section, const std::string& isa, const std::string& kernel,
                  const std::string& shape) const {
    return r.knob_section == section &&
           tuned_candidate(r, kernel, shape, target_of_isa(isa), hw.key(), revision_of(section));
  }
};

std::string ms(double v) { return std::to_string(v) + " ms"; }

// The sections whose verified knob-set records on this hardware were all measured
// with another revision of the section's schedule: a build would otherwise lose
// them silently (the count of tuned sets drops, nothing says why).
std::vector<std::string> retired_sections(const std::vector<record>& records, const usable_at& usable) {
  std::map<std::string, std::set<int>> earlier;
  std::set<std::string> current;
  for (const auto& r : records) {
    if (r.hardware != usable.hw.key() || !r.verified() || !autoscheduler_of(r.knobs).empty())
      continue;
    if (r.schedule_revision == usable.revision_of(r.knob_section))
      current.insert(r.knob_section);
    else
      earlier[r.knob_section].insert(r.schedule_revision);
  }
  std::vector<std::string> retired;
  for (const auto& [section, revisions] : earlier) {
    if (current.count(section))
      continue;
    std::vector<std::string> measured;
    for (int v : revisions)
      measured.push_back(std::to_string(v));
    retired.push_back(section + " (revision" + (revisions.size() > 1 ? "s " : " ") + join(measured, ", ") + "; now " +
                      std::to_string(usable.revision_of(section)) + ")");
  }
  return retired;
}

// Whether `r` was measured with `values`' algorithm knobs (those it names).
bool measured_with(const record& r, const std::set<std::string>& algorithm, const nlohmann::json& values) {
  return std::all_of(algorithm.begin(), algorithm.end(),
                     [&](const std::string& k) { return !r.knobs.count(k) || values.value(k, -1) == r.knobs.at(k); });
}

// The first of `shapes` that `kernel` runs in `bucket`, if any.
const preset_entry* first_shape_in(const std::vector<preset_entry>& shapes, const std::string& kernel,
                                   const std::string& bucket) {
  const auto it = std::find_if(shapes.begin(), shapes.end(), [&](const preset_entry& e) {
    return e.kernel == kernel && bucket_of(e.shape) == bucket;
  });
  return it == shapes.end() ? nullptr : &*it;
}

// A section's algorithm knobs (one value per pipeline, which all its buckets run)
// are chosen on the evidence of every bucket its kernels run in, not of the first
// primary shape alone: taken there, a Zen 3's attention adopted kv_chunk 64 from its
// prefill record and ran it at batch 1 too, where no record had measured it and it
// is 1.7x slower. Each bucket is judged at its shape among `shapes` (else at the
// latest record's shape in it); a value set qualifies when measured at every such
// shape, and costs the sum of its best time over each shape's best. The cheapest
// qualifying set wins; without one the base file's values stay. Buckets nothing
// was measured in are no evidence for any value.
using algorithm_values = std::map<std::string, int>;

algorithm_values algorithm_of(const record& r, const std::set<std::string>& algorithm) {
  algorithm_values v;
  for (const auto& k : algorithm)
    if (r.knobs.count(k))
      v[k] = r.knobs.at(k);
  return v;
}

// The (kernel, shape) each bucket of `section`'s kernels is judged at.
std::vector<std::pair<std::string, std::string>> judged_shapes(const std::string& section, const std::string& isa,
                                                               const std::vector<record>& records,
                                                               const std::vector<preset_entry>& shapes,
                                                               const usable_at& usable,
                                                               const std::map<std::string, bucket_plan>& plans) {
  std::vector<std::pair<std::string, std::string>> judged;
  for (const auto& [kernel, plan] : plans) {
    if (plan.section != section)
      continue;
    for (const auto& bucket : plan.buckets) {
      const preset_entry* tuned = first_shape_in(shapes, kernel, bucket);
      std::string at = tuned ? tuned->shape : "", latest_when;
      for (const auto& r : records)
        if (at.empty() && r.kernel == kernel && bucket_of(r.shape) == bucket && r.verified() &&
            usable(r, section, isa, kernel, r.shape) && r.when > latest_when)
          latest_when = r.when, at = r.shape;
      if (!at.empty())
        judged.emplace_back(kernel, at);
    }
  }
  return judged;
}

std::optional<algorithm_values> cheapest_algorithm(const std::string& section, const std::string& isa,
                                                   const std::set<std::string>& algorithm,
                                                   const std::vector<record>& records,
                                                   const std::vector<preset_entry>& shapes, const usable_at& usable,
                                                   const std::map<std::string, bucket_plan>& plans) {
  const auto judged = judged_shapes(section, isa, records, shapes, usable, plans);
  std::map<algorithm_values, std::vector<double>> best; // per judged shape; 0: not measured
  std::vector<double> fastest(judged.size(), 0);
  for (std::size_t i = 0; i < judged.size(); ++i)
    for (const auto& r : records)
      if (r.verified() && usable(r, section, isa, judged[i].first, judged[i].second)) {
        auto& b = best.try_emplace(algorithm_of(r, algorithm), judged.size(), 0.0).first->second;
        b[i] = b[i] == 0 ? r.median_ms : std::min(b[i], r.median_ms);
        fastest[i] = fastest[i] == 0 ? r.median_ms : std::min(fastest[i], r.median_ms);
      }
  std::optional<algorithm_values> chosen;
  double least = 0;
  for (const auto& [values, times] : best) {
    bool everywhere = true;
    double cost = 0;
    for (std::size_t i = 0; i < times.size(); ++i)
      if (fastest[i] > 0) // a shape nothing was measured at judges no value
        everywhere = everywhere && times[i] > 0, cost += times[i] / fastest[i];
    if (!everywhere)
      continue;
    if (!chosen || cost < least)
      chosen = values, least = cost;
  }
  return chosen;
}

void choose_algorithms(nlohmann::json& knobs, const std::vector<record>& records,
                       const std::vector<preset_entry>& shapes, const usable_at& usable,
                       const std::map<std::string, bucket_plan>& plans,
                       const std::map<std::string, std::set<std::string>>& algorithm_knobs, export_report& report) {
  for (const auto& [section, algorithm] : algorithm_knobs) {
    if (!knobs.contains(section))
      continue;
    for (auto& [isa, values] : knobs[section].items()) {
      const auto chosen = cheapest_algorithm(section, isa, algorithm, records, shapes, usable, plans);
      if (!chosen || chosen->size() != algorithm.size())
        continue;
      std::vector<std::string> named;
      for (const auto& [k, v] : *chosen)
        values[k] = v, named.push_back(k + "=" + std::to_string(v));
      report.algorithms.push_back(section + "." + isa + ": " + join(named, ","));
    }
  }
}

// Section-level values, each knob from a record measured where it changes the
// calls (knob_phase): the record at the section's first primary shape that has
// one gives the knobs of that shape's phase; the knobs of the other phase, which
// that record never ran (a panel GEMM's decode tile and prefetch at the FFN's
// prefill shape), come from the first shape of their phase with a record that
// holds them: for decode steps a batch's (the rows a decode tile and its
// prefetch serve), else one row's.
// Only records measured with the section's algorithm values (choose_algorithms).
struct phase_source {
  const record* r = nullptr;
  std::string where;
};

std::vector<std::string> buckets_serving(knob_phase p) {
  return p == knob_phase::prefill ? std::vector<std::string>{"prefill"} : std::vector<std::string>{"decode", "decode1"};
}

class section_adoption {
public:
  section_adoption(const std::string& section, const std::string& isa, const nlohmann::json& values,
                   const std::vector<record>& records, const std::vector<preset_entry>& shapes, const usable_at& usable,
                   const std::map<std::string, std::set<std::string>>& algorithm_knobs, const section_phases& phases)
      : section_(section), isa_(isa), values_(values), records_(records), shapes_(shapes), usable_(usable),
        algorithm_knobs_(algorithm_knobs), phases_(phases) {}

  knob_phase phase(const std::string& knob) const { return phase_of(phases_, section_, knob); }

  // The record at the first primary shape that has one, and that shape's bucket.
  std::pair<phase_source, std::string> primary() const {
    for (const auto& e : shapes_)
      if (e.primary)
        if (const record* r = pick_tuned(records_, [&](const record& x) { return ok(x, e); }))
          return {{r, e.kernel + " " + e.shape}, bucket_of(e.shape)};
    return {};
  }
  // The record of the first shape of phase `p` that holds one of its knobs.
  phase_source of_phase(knob_phase p) const {
    for (const auto& bucket : buckets_serving(p))
      for (const auto& e : shapes_)
        if (bucket_of(e.shape) == bucket)
          if (const record* r = pick_tuned(records_, [&](const record& x) { return ok(x, e) && holds(x, p); }))
            return {r, e.kernel + " " + e.shape};
    return {};
  }
  bool declares(knob_phase p) const {
    for (const auto& [name, v] : values_.items())
      if (name[0] != '_' && phase(name) == p)
        return true;
    return false;
  }

private:
  bool ok(const record& r, const preset_entry& e) const {
    return usable_(r, section_, isa_, e.kernel, e.shape) &&
           (!algorithm_knobs_.count(section_) || measured_with(r, algorithm_knobs_.at(section_), values_));
  }
  bool holds(const record& r, knob_phase p) const {
    return std::any_of(r.knobs.begin(), r.knobs.end(), [&](const auto& kv) { return phase(kv.first) == p; });
  }
  const std::string &section_, &isa_;
  const nlohmann::json& values_;
  const std::vector<record>& records_;
  const std::vector<preset_entry>& shapes_;
  const usable_at& usable_;
  const std::map<std::string, std::set<std::string>>& algorithm_knobs_;
  const section_phases& phases_;
};

void adopt_section_records(nlohmann::json& knobs, const std::vector<record>& records,
                           const std::vector<preset_entry>& shapes, const usable_at& usable,
                           const std::map<std::string, std::set<std::string>>& algorithm_knobs,
                           const section_phases& phases, export_report& report) {
  for (auto& [section, isas] : knobs.items()) {
    if (section[0] == '_')
      continue;
    for (auto& [isa, values] : isas.items()) {
      const section_adoption in(section, isa, values, records, shapes, usable, algorithm_knobs, phases);
      std::string why = "tuned on this machine:";
      bool adopted = false;
      // Only knobs the section still has: a record may hold one a schedule has
      // since dropped (its code unchanged otherwise).
      const auto adopt = [&](const phase_source& s, const auto& takes, const std::string& label) {
        for (const auto& [name, v] : s.r->knobs)
          if (values.contains(name) && takes(in.phase(name)))
            values[name] = v;
        why += std::string(adopted ? "; " : " ") + (label.empty() ? "" : label + " knobs: ") + s.where + ", " +
               ms(s.r->median_ms) + " (" + s.r->when + ")";
        report.tuned.push_back(section + "." + isa + (label.empty() ? "" : " " + label) + " (" + s.where + ": " +
                               ms(s.r->median_ms) + ")");
        adopted = true;
      };
      const auto primary_at = in.primary();
      const phase_source& primary = primary_at.first;
      const std::string& bucket = primary_at.second;
      if (primary.r)
        adopt(
            primary, [&](knob_phase p) { return phase_covers(p, bucket); }, "");
      for (knob_phase p : {knob_phase::decode, knob_phase::prefill}) {
        if ((primary.r && phase_covers(p, bucket)) || !in.declares(p))
          continue;
        if (const phase_source s = in.of_phase(p); s.r)
          adopt(
              s, [&](knob_phase q) { return q == p; }, p == knob_phase::decode ? "decode-step" : "prefill");
      }
      if (!adopted)
        report.defaulted.push_back(section + "." + isa);
      else
        values["_why"] = why;
    }
  }
}

// One kernel's knob set for one bucket on one ISA: the section's values, the
// base file's bucket values over them, then the record at the bucket's shape.
// The algorithm knobs stay the section's: one pipeline has one algorithm, and a
// bucket without a set of its own runs the section's values (a base file written
// by an earlier tune may hold a bucket set of the section's earlier algorithm).
nlohmann::json bucket_set(const nlohmann::json& knobs, const std::string& kernel, const bucket_plan& plan,
                          const std::string& bucket, const std::string& isa, const std::vector<record>& records,
                          const preset_entry* at, const usable_at& usable, const std::set<std::string>& algorithm,
                          const section_phases& phases, export_report& report) {
  const nlohmann::json& section = knobs[plan.section][isa];
  nlohmann::json values = section;
  values.erase("_why");
  if (const std::string base = bucket_set_pointer(knobs, kernel, bucket, isa); !base.empty())
    values.update(knobs[nlohmann::json::json_pointer(base)]); // as the build runs the base file
  for (const auto& k : algorithm)
    if (section.contains(k))
      values[k] = section[k];
  const record* rec =
      at ? pick_tuned(records,
                      [&](const record& r) {
                        return usable(r, plan.section, isa, kernel, at->shape) && measured_with(r, algorithm, values);
                      })
         : nullptr;
  if (!rec) {
    if (!values.contains("_why"))
      values["_why"] = "no tuned record" + (at ? " at " + at->shape : std::string(" (no such shape tuned)")) +
                       ": the values of section " + plan.section;
    return values;
  }
  // Only the knobs that change this bucket's calls: the record's others kept the
  // values its search started from (the tuner varies a shape's own knobs only),
  // and the section's come from records where they matter (adopt_section_records).
  for (const auto& [name, v] : rec->knobs)
    if (values.contains(name) && phase_covers(phase_of(phases, plan.section, name), bucket))
      values[name] = v;
  values["_why"] = "tuned on this machine at " + at->shape + ": " + ms(rec->median_ms) +
                   (rec->confirmed() ? " (confirmed)" : "") + " (" + rec->when + ")";
  report.tuned.push_back(kernel + "@" + bucket + "." + isa + " (" + at->shape + ": " + ms(rec->median_ms) + ")");
  return values;
}

void write_if_changed(const std::string& out_file, const std::string& text) {
  std::ifstream old(out_file);
  const std::string before((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
  if (before == text)
    return; // unchanged: keep the timestamp, so kernels are not rebuilt
  if (const auto dir = std::filesystem::path(out_file).parent_path(); !dir.empty())
    std::filesystem::create_directories(dir);
  std::ofstream out(out_file + ".tmp");
  if (!(out << text))
    throw error("cannot write " + out_file);
  out.close();
  std::filesystem::rename(out_file + ".tmp", out_file);
}

} // namespace

export_report export_knobs(const std::string& base_knob_file, const database& db, const hardware& hw,
                           const std::vector<preset_entry>& shapes, const std::string& out_file,
                           const std::map<std::string, int>& revisions, const std::map<std::string, bucket_plan>& plans,
                           const std::map<std::string, std::set<std::string>>& algorithm_knobs,
                           const section_phases& phases) {
  std::ifstream in(base_knob_file);
  if (!in)
    throw error("cannot open " + base_knob_file);
  nlohmann::json knobs = nlohmann::json::parse(in);
  const auto records = db.load();
  const usable_at usable{hw, revisions};
  export_report report;
  choose_algorithms(knobs, records, shapes, usable, plans, algorithm_knobs, report);
  adopt_section_records(knobs, records, shapes, usable, algorithm_knobs, phases, report);
  report.retired = retired_sections(records, usable);

  nlohmann::json buckets = knobs.value("_buckets", nlohmann::json::object());
  for (const auto& [kernel, plan] : plans) {
    if (!knobs.contains(plan.section))
      throw error("kernel " + kernel + ": the knob file has no section " + plan.section);
    const auto algorithm =
        algorithm_knobs.count(plan.section) ? algorithm_knobs.at(plan.section) : std::set<std::string>{};
    for (const auto& bucket : plan.buckets) {
      const preset_entry* at = first_shape_in(shapes, kernel, bucket);
      nlohmann::json sets = nlohmann::json::object();
      for (const auto& [isa, section_values] : knobs[plan.section].items())
        sets[isa] = bucket_set(knobs, kernel, plan, bucket, isa, records, at, usable, algorithm, phases, report);
      buckets[kernel][bucket] = sets;
    }
  }
  for (const auto& e : shapes) {
    const auto p = plans.find(e.kernel);
    if (p != plans.end() &&
        std::find(p->second.buckets.begin(), p->second.buckets.end(), bucket_of(e.shape)) == p->second.buckets.end())
      report.unplanned.push_back(e.kernel + " " + e.shape + " (bucket " + bucket_of(e.shape) + ")");
  }
  if (!buckets.empty())
    knobs["_buckets"] = buckets;
  knobs["_source"] = {{"hardware", hw.key()},
                      {"base", std::filesystem::path(base_knob_file).filename().string()},
                      {"shapes", shapes.size()},
                      {"tuned_sets", report.tuned.size()},
                      {"revisions", revisions}};
  write_if_changed(out_file, knobs.dump(2) + "\n");
  return report;
}

export_report export_catalog_knobs(const std::string& base, const database& db, const hardware& hw,
                                   const std::vector<preset_entry>& shapes, const std::string& out,
                                   const catalog& cat) {
  return export_knobs(base, db, hw, shapes, out, cat.revisions, cat.bucket_plans(), cat.algorithm_knobs,
                      cat.knob_phases);
}

} // namespace halformer::tuner
