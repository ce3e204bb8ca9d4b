#include "export_knobs.hpp"

#include "halformer/error.hpp"
#include "presets.hpp"
#include "tuner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace halformer::tuner {

export_report export_knobs(const std::string& default_knob_file, const database& db, const hardware& hw,
                           const std::string& preset_name, const std::string& out_file,
                           const std::map<std::string, int>& revisions,
                           const std::map<std::string, variant_plan>& variants) {
  std::ifstream in(default_knob_file);
  if (!in)
    throw error("cannot open " + default_knob_file);
  nlohmann::json knobs = nlohmann::json::parse(in);
  const auto records = db.load();
  const auto entries = preset(preset_name);
  // Branch knobs: a schedule's "gemv_*" knobs size its decode matrix-vector
  // branch alone, which prefill shapes never take; they come from the best
  // record at a one-row decode shape (t = 1, batch = 1), the rest from the
  // best record at the preset's primary shape.
  const auto branch_knob = [](const std::string& n) {
    return n.rfind("gemv_", 0) == 0 || n.rfind("hidden_gemv_", 0) == 0;
  };
  export_report report;
  for (auto& [section, isas] : knobs.items()) {
    if (section[0] == '_')
      continue;
    for (auto& [isa, values] : isas.items()) {
      const std::string target = target_of_isa(isa);
      const int revision = revisions.count(section) ? revisions.at(section) : 1;
      // A knob-set record of this section measured here, now, at entry e.
      const auto usable = [&](const record& r, const preset_entry& e) {
        return r.knob_section == section && tuned_candidate(r, e.kernel, e.shape, target, hw.key(), revision);
      };
      const record* best = nullptr;
      std::string where;
      // The section's first primary shape (in preset order) that has records
      // decides: timings of different shapes are not comparable.
      for (const auto& e : entries)
        if (e.primary && !best)
          if ((best = pick_tuned(records, [&](const record& r) { return usable(r, e); })))
            where = e.kernel + " " + e.shape;
      const record* gemv = nullptr;
      std::string gemv_where;
      for (const auto& e : entries)
        if (bucket_of(e.shape) == "decode1" && !gemv)
          if ((gemv = pick_tuned(records, [&](const record& r) {
                 return usable(r, e) && std::any_of(r.knobs.begin(), r.knobs.end(),
                                                    [&](const auto& kv) { return branch_knob(kv.first); });
               })))
            gemv_where = e.kernel + " " + e.shape;
      if (!best && !gemv) {
        report.defaulted.push_back(section + "." + isa);
        continue;
      }
      std::string why = "tuned on this machine:";
      if (best) {
        for (const auto& [name, v] : best->knobs)
          if (!branch_knob(name) || !gemv)
            values[name] = v;
        why += " " + where + ", " + std::to_string(best->median_ms) + " ms (" + best->when + ")";
        report.tuned.push_back(section + "." + isa + " (" + where + ": " + std::to_string(best->median_ms) + " ms)");
      }
      if (gemv) {
        for (const auto& [name, v] : gemv->knobs)
          if (branch_knob(name))
            values[name] = v;
        why += "; gemv_* knobs: " + gemv_where + ", " + std::to_string(gemv->median_ms) + " ms";
        report.tuned.push_back(section + "." + isa + " gemv (" + gemv_where + ": " + std::to_string(gemv->median_ms) +
                               " ms)");
      }
      values["_why"] = why;
    }
  }

  // Per-kernel variants, one per shape bucket the build compiles (see header).
  nlohmann::json out_variants = nlohmann::json::object();
  for (const auto& [kernel, plan] : variants) {
    if (!knobs.contains(plan.section))
      throw error("kernel " + kernel + ": the knob file has no section " + plan.section);
    for (const auto& bucket : plan.buckets) {
      const preset_entry* at = nullptr;
      for (const auto& e : entries)
        if (e.kernel == kernel && bucket_of(e.shape) == bucket && !at)
          at = &e;
      for (const auto& [isa, section_values] : knobs[plan.section].items()) {
        nlohmann::json values = section_values;
        const std::string target = target_of_isa(isa);
        const int revision = revisions.count(plan.section) ? revisions.at(plan.section) : 1;
        const record* rec = at ? pick_tuned(records,
                                            [&](const record& r) {
                                              return r.knob_section == plan.section &&
                                                     tuned_candidate(r, kernel, at->shape, target, hw.key(), revision);
                                            })
                               : nullptr;
        if (rec) {
          for (const auto& [name, v] : rec->knobs)
            values[name] = v;
          values["_why"] = "tuned on this machine at " + at->shape + ": " + std::to_string(rec->median_ms) + " ms" +
                           (rec->confirmed() ? " (confirmed)" : "") + " (" + rec->when + ")";
          report.tuned.push_back(kernel + "@" + bucket + "." + isa + " (" + at->shape + ": " +
                                 std::to_string(rec->median_ms) + " ms)");
        } else {
          values["_why"] = "no tuned record" + (at ? " at " + at->shape : std::string(" (no preset shape)")) +
                           ": the values of section " + plan.section;
        }
        out_variants[kernel][bucket][isa] = values;
      }
    }
  }
  for (const auto& e : entries) {
    const auto v = variants.find(e.kernel);
    const std::string b = bucket_of(e.shape);
    if (v != variants.end() &&
        std::find(v->second.buckets.begin(), v->second.buckets.end(), b) == v->second.buckets.end())
      report.unvariant.push_back(e.kernel + " " + e.shape + " (bucket " + b + ")");
  }
  if (!variants.empty())
    knobs["_variants"] = out_variants;
  std::filesystem::create_directories(std::filesystem::path(out_file).parent_path());
  const std::string text = knobs.dump(2) + "\n";
  {
    std::ifstream old(out_file);
    const std::string before((std::istreambuf_iterator<char>(old)), std::istreambuf_iterator<char>());
    if (before == text)
      return report; // unchanged: keep the timestamp, so kernels are not rebuilt
  }
  std::ofstream out(out_file + ".tmp");
  out << text;
  out.close();
  std::filesystem::rename(out_file + ".tmp", out_file);
  return report;
}

} // namespace halformer::tuner
