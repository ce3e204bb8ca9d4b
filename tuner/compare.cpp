#include "compare.hpp"
#include "halformer/machine.hpp"

#include "halformer/chart.hpp"
#include "halformer/onednn_matmul.hpp"
#include "halformer/problems.hpp"

#include "halformer/error.hpp"
#include "process.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

namespace halformer::tuner {

namespace {
// The GEMMs a kernel computes at a shape, from its problem (common/), as the BLAS
// harness's "m,n,k[,epilogue];..." argument; "" when it is not GEMM-shaped.
std::string gemms_of(const std::string& kernel, const std::string& shape) {
  auto args = problems::parse_shape(shape);
  std::string s;
  for (const auto& g : problems::make_problem(kernel, args).gemms) {
    s += (s.empty() ? "" : ";") + std::to_string(g.m) + "," + std::to_string(g.n) + "," + std::to_string(g.k);
    if (const std::string e = to_text(g.epilogue); !e.empty())
      s += "," + e;
  }
  return s;
}

// One schedule of a comparison: built (compile and link in child processes), or
// the BLAS harness's command line, or a note saying why it has no row.
struct entry {
  compare_row row;
  built_candidate cand;
  const tune_options* opts = nullptr;
  std::vector<std::string> blas;
};

struct comparison {
  const toolchain& t;
  const catalog& c;
  const kernel_info& k;
  const hardware& hw;
  tune_options m, g; // the CPU measurement, and the GPU schedules' on the OpenCL device
  std::vector<record> records;
  std::string parallelism;

  // This machine's tuned knob-set record of this kernel and shape for a target,
  // machine key and schedule revision (autoscheduler records are their own rows).
  const record* best_tuned(const std::string& tgt, const std::string& key, int revision) const {
    return pick_tuned(records,
                      [&](const record& r) { return tuned_candidate(r, k.name, m.shape, tgt, key, revision); });
  }

  entry build_entry(const std::string& s) const {
    entry e;
    e.row = {s, {}, ""};
    e.opts = &m;
    std::fprintf(stderr, "[compare %s %s] building %s...\n", k.name.c_str(), m.shape.c_str(), s.c_str());
    if (s == "default") {
      e.cand = build(t, k, hand_knobs_at(t, k, m.shape, m.isa), m, hw, "default");
    } else if (s == "tuned") {
      if (const record* best = best_tuned(target_of_isa(m.isa), hw.key(), k.revision))
        e.cand = build(t, k, best->knobs, m, hw, "tuned"); // re-measured in this run
      else
        e.row.note = "no tuned record for this kernel, shape and machine";
    } else if (s == "adams2019" || s == "mullapudi2016" || s == "li2018") {
      const std::string name = s == "adams2019" ? "Adams2019" : s == "mullapudi2016" ? "Mullapudi2016" : "Li2018";
      e.cand = build(t, k, hand_knobs_at(t, k, m.shape, m.isa), m, hw, "autoscheduler:" + name,
                     {"-p", t.autoscheduler_dir + "/libautoschedule_" + s + ".so", "autoscheduler=" + name,
                      "autoscheduler.parallelism=" + parallelism, "estimates=" + estimates_of(m.shape)});
    } else if (s == "blas" || s == "onednn" || s == "onednn-fused") {
      const std::string gemms = gemms_of(k.name, m.shape);
      if (gemms.empty())
        e.row.note = "not GEMM-shaped";
      else {
        e.blas = {t.blas_harness, gemms,
                  "--threads",    parallelism,
                  "--samples",    std::to_string(m.samples),
                  "--min-ms",     std::to_string(m.min_sample_ms)};
        if (s != "blas") // oneDNN's matmul primitive of the kernel's type, bare or with the kernel's epilogue
          e.blas.insert(e.blas.end(), {"--matmul", onednn::to_string(onednn::matmul_type_of(k.name))});
        if (s == "onednn-fused")
          e.blas.push_back("--fused");
        else if (k.name.ends_with("_int8")) // oneDNN's int8 GEMM for the int8 kernels
          e.blas.push_back("--int8");
      }
    } else if (s == "opencl" || s == "opencl-tuned") {
      // The GPU schedule of the same kernel on the OpenCL device (here: PoCL on
      // this CPU), measured by the same harness; tuned: the fastest verified
      // OpenCL record of this machine and device.
      const kernel_info kg = kernel_for(c, k.name, "opencl");
      e.opts = &g;
      if (s == "opencl")
        e.cand = build(t, kg, hand_knobs_at(t, kg, g.shape, "opencl"), g, hw, "opencl default");
      else if (const record* best = best_tuned(target_of_isa("opencl"), hardware_key(hw, "opencl"), kg.revision))
        e.cand = build(t, kg, best->knobs, g, hw, "opencl tuned");
      else
        e.row.note = "no tuned OpenCL record for this kernel, shape and device";
    } else {
      throw error(
          "unknown schedule '" + s +
          "' (default, tuned, adams2019, mullapudi2016, li2018, blas, onednn, onednn-fused, opencl, opencl-tuned)");
    }
    if (!e.cand.ok() && !e.cand.r.status.empty())
      e.row.r = e.cand.r; // did not build
    return e;
  }
};

record run_blas(const std::vector<std::string>& command, double timeout_s) {
  const auto p = run_process(command, timeout_s);
  record r;
  try {
    const auto j = nlohmann::json::parse(p.out);
    const bool int8 = std::find(command.begin(), command.end(), "--int8") != command.end(),
               fused = std::find(command.begin(), command.end(), "--fused") != command.end();
    const auto matmul = std::find(command.begin(), command.end(), "--matmul");
    if (j.at("status") != "ok")
      throw std::runtime_error(j.value("detail", std::string("failed")));
    r.status = "ok";
    if (matmul != command.end())
      r.source = "oneDNN matmul " + *(matmul + 1) + (fused ? " fused" : "") + " (" + j.value("impl", std::string("?")) +
                 ") " + command[1];
    else
      r.source = (int8 ? "oneDNN gemm_u8s8s32 " : "OpenBLAS sgemm ") + command[1];
    r.median_ms = j.at("median_ms"), r.min_ms = j.at("min_ms"), r.max_ms = j.at("max_ms");
    r.gflops = j.at("gflops");
  } catch (const std::exception&) {
    r.status = "crash", r.detail = p.describe() + ": " + p.err;
  }
  return r;
}
} // namespace

std::vector<compare_row> compare(const toolchain& t, const catalog& c, const compare_options& o, const hardware& hw) {
  comparison cmp{t, c, c.kernel(o.kernel), hw, o.measure, o.measure, database(o.db_dir).load(), ""};
  cmp.m.shape = cmp.g.shape = canonical_shape(o.shape);
  cmp.g.isa = "opencl";
  cmp.parallelism = std::to_string(cmp.m.threads > 0 ? cmp.m.threads : machine::online_cpus());
  // First every schedule is built; then all of them run in turn, `rounds` times,
  // so that the machine's drift is shared.
  std::vector<entry> entries;
  for (const auto& s : o.schedules)
    entries.push_back(cmp.build_entry(s));
  std::vector<timed_run> runs;
  std::vector<entry*> timed;
  for (auto& e : entries) {
    if (e.cand.ok())
      runs.push_back({e.row.schedule, [&e] { return run(e.cand, *e.opts); }});
    else if (!e.blas.empty())
      runs.push_back({e.row.schedule, [&e, &cmp] { return run_blas(e.blas, cmp.m.candidate_timeout_s); }});
    else
      continue;
    timed.push_back(&e);
  }
  const auto measured = interleaved(runs, std::max(1, o.rounds), "compare " + cmp.k.name + " " + cmp.m.shape);
  for (std::size_t i = 0; i < timed.size(); ++i)
    timed[i]->row.r = measured[i];
  std::vector<compare_row> rows;
  for (auto& e : entries) {
    if (!e.row.r.status.empty() && !e.row.r.verified())
      e.row.note = e.row.r.status + ": " + e.row.r.detail.substr(0, 200);
    rows.push_back(std::move(e.row));
  }
  return rows;
}

std::string table(const std::string& title, const std::vector<compare_row>& rows, double peak) {
  const compare_row* base = nullptr;
  for (const auto& r : rows)
    if (r.schedule == "default" && r.r.verified())
      base = &r;
  std::string out = title + "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-9s %10s %22s %9s %8s %8s %9s\n", "schedule", "verified", "median ms",
                "min-max ms", "GFLOP/s", "GB/s", "% peak", "vs default");
  out += line;
  for (const auto& r : rows) {
    if (!r.r.verified()) {
      std::snprintf(line, sizeof line, "%-14s %-9s %s\n", r.schedule.c_str(), r.r.status.empty() ? "-" : "no",
                    r.note.c_str());
    } else {
      const bool blas = r.schedule == "blas" || r.schedule.starts_with("onednn"); // a peer: nothing of ours to verify
      char vs_default[32] = "-"; // no default among the rows: nothing to compare with
      if (base)
        std::snprintf(vs_default, sizeof vs_default, "%.2fx", base->r.median_ms / r.r.median_ms);
      std::snprintf(line, sizeof line, "%-14s %-9s %10.4g %10.4g - %-10.4g %9.1f %8s %7.1f%% %9s\n", r.schedule.c_str(),
                    blas ? "n/a" : "yes", r.r.median_ms, r.r.min_ms, r.r.max_ms, r.r.gflops,
                    blas ? "-" : std::to_string(int(r.r.gbps)).c_str(), peak > 0 ? 100 * r.r.gflops / peak : 0.0,
                    vs_default);
    }
    out += line;
  }
  return out;
}

void write_reports(const std::string& dir, const std::string& name, const std::string& title,
                   const std::vector<compare_row>& rows, double peak) {
  std::filesystem::create_directories(dir);
  std::ofstream csv(dir + "/" + name + ".csv");
  csv << "schedule,verified,median_ms,min_ms,max_ms,gflops,gbps,percent_of_peak,note\n";
  nlohmann::json j = {{"title", title}, {"fma_peak_gflops", peak}, {"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    csv << r.schedule << "," << (r.r.verified() ? "yes" : "no") << "," << r.r.median_ms << "," << r.r.min_ms << ","
        << r.r.max_ms << "," << r.r.gflops << "," << r.r.gbps << "," << (peak > 0 ? 100 * r.r.gflops / peak : 0)
        << ",\"" << r.note << "\"\n";
    j["rows"].push_back({{"schedule", r.schedule}, {"record", r.r.to_json()}, {"note", r.note}});
  }
  std::ofstream(dir + "/" + name + ".json") << j.dump(1) << "\n";
  // One bar per schedule (median), whisker min-max; a schedule without a
  // verified measurement shows its note.
  std::vector<chart::group> groups;
  for (const auto& r : rows) {
    chart::bar b;
    if (r.r.verified())
      b = {r.r.median_ms, r.r.min_ms, r.r.max_ms, ""};
    else
      b.note = r.note.empty() ? "-" : r.note;
    groups.push_back({r.schedule, {b}});
  }
  chart::write_bars(dir + "/" + name + ".svg", title + " (shorter is faster)", {"median, whiskers min-max"}, "ms",
                    groups);
}

} // namespace halformer::tuner
