// The tuner-facing commands (tune, compare) and `info`, apart from main.cpp's
// option parsing.
#include "commands.hpp"

#include "halformer/dsl/kernels.hpp"
#include "halformer/error.hpp"
#include "halformer/machine.hpp"
#include "halformer/versions.hpp"
#include "halformer_build_info.h"
#include "halformer_kernels.h"
#include "presets.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

namespace halformer::cli {

namespace tuner = halformer::tuner;

double seconds_of(const std::string& text) {
  const auto bad = [&] { return error("budget '" + text + "' is not a positive duration like 90s, 5m or 1h"); };
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  const std::string unit = text.substr(used);
  const double scale = unit == "" || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (scale == 0 || !(v > 0))
    throw bad();
  return v * scale;
}

namespace {
std::string clock_text(double s) { return fmt::format("{}:{:02d}", int(s) / 60, int(s) % 60); }
// The wall-clock time `s` seconds from now, "HH:MM" local.
std::string time_after(double s) {
  const std::time_t t = std::time(nullptr) + std::time_t(s);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M", std::localtime(&t));
  return buf;
}
} // namespace

std::string best_isa() {
  return halformer_cpu_supports("avx512") ? "avx512" : halformer_cpu_supports("avx2") ? "avx2" : "sse41";
}

// The ISA to tune or compare: this CPU's best unless one is asked for.
// The ISA this CPU runs the dot-product kernels on with `isa`'s knobs (tuner::tune_options).
std::string dot_product_isa(const std::string& isa) {
  return isa == "avx512" && halformer_cpu_supports("avx512_vnni") ? "avx512_vnni" : "";
}

std::string resolve_isa(const std::string& asked) {
  if (halformer_kernels_init() != 0)
    throw error(halformer_last_error());
  if (asked.empty() || asked == "auto")
    return best_isa();
  if (asked == "opencl") {
    if (!halformer_device_available("opencl"))
      throw error(std::string("--isa opencl: ") + halformer_last_error());
    return asked;
  }
  if (asked != "avx512" && asked != "avx2" && asked != "sse41")
    throw error("--isa must be avx512, avx2, sse41 or opencl, not '" + asked + "'");
  if (!halformer_cpu_supports(asked.c_str()))
    throw error("this CPU cannot run " + asked + " code");
  return asked;
}

// The (kernel, shape) pairs a tune request names: a preset, a model directory's
// shapes, or one kernel at one shape.
std::vector<tuner::preset_entry> tune_jobs(const tune_request& r, const std::string& shape, const tuner::catalog& cat) {
  const auto typed = [&](std::vector<tuner::preset_entry> jobs) { return tuner::typed_shapes(jobs, r.compute_type); };
  if (!r.preset.empty())
    return typed(tuner::preset(r.preset));
  if (!r.model_dir.empty()) {
    std::vector<std::string> warnings;
    const auto c = model_config::load_dir(r.model_dir, &warnings);
    return typed(tuner::model_shapes({c.d_model, c.nhead, c.dim_feedforward, c.src_vocab, c.tgt_vocab, c.activation},
                                     r.prefill_tokens, r.batch));
  }
  if (r.kernel.empty() || shape.empty())
    throw error("tune needs --kernel and --shape, --preset, or --model");
  // A decode shape's record makes its bucket's knob set, not the section's (which
  // the kernels of the section without bucket sets run at every shape), unless
  // the kernel has no knob set for that bucket.
  const std::string canonical = tuner::canonical_shape(shape);
  const auto& buckets = cat.kernel(r.kernel).buckets;
  const bool own_set = std::find(buckets.begin(), buckets.end(), tuner::bucket_of(canonical)) != buckets.end();
  return {{r.kernel, canonical, tuner::bucket_of(canonical) == "prefill" || !own_set}};
}

// Writes this hardware's knob file from the database at the tuned shapes, over
// its previous knob file (tunes accumulate) or the hand defaults. A previous file
// written for other schedule revisions is first rewritten as the build would
// choose without it (the hand defaults and the database's current records at the
// preset's shapes): a changed schedule may declare other knobs than it holds.
void write_knob_file(const tune_request& r, const std::vector<tuner::preset_entry>& jobs, const tuner::toolchain& tools,
                     const tuner::catalog& cat, const tuner::database& db, const tuner::hardware& hw) {
  const std::string out =
      r.knob_file.empty() ? std::string(build_info::tuned_knob_dir) + "/" + hw.slug() + ".json" : r.knob_file;
  if (std::filesystem::exists(out) && !tuner::stale_sections(out, cat.revisions).empty()) {
    tuner::export_catalog_knobs(tools.knob_file, db, hw, tuner::preset("transformer-base"), out, cat);
    fmt::print("knob file {} was written for other schedule revisions: rewritten from the hand defaults and the "
               "current records first\n",
               out);
  }
  const std::string base = std::filesystem::exists(out) ? out : tools.knob_file;
  const auto report = tuner::export_catalog_knobs(base, db, hw, jobs, out, cat);
  fmt::print("knob file {}: {} knob sets tuned at these shapes (over {}).\n", out, report.tuned.size(), base);
  for (const auto& a : report.algorithms)
    fmt::print("algorithm knobs {} (measured in every bucket that has records)\n", a);
  if (r.knob_file.empty())
    fmt::print("The next build on this hardware uses it; elsewhere build with -DHALFORMER_KNOBS={}\n", out);
  else
    fmt::print("Build with -DHALFORMER_KNOBS={} to use it\n", out);
}

// Drops the records measured with other revisions of their schedule (every
// machine's): a build never uses them, and a search neither resumes from nor
// seeds with them. The version history keeps them.
int prune_retired(const tuner::database& db, const tuner::catalog& cat) {
  std::map<std::string, int> dropped_by_section;
  std::size_t kept = 0;
  const auto dropped = db.keep_only([&](const tuner::record& rec) {
    const bool current = tuner::measured_with_current_schedule(cat, rec);
    if (current)
      ++kept;
    else
      ++dropped_by_section[rec.knob_section];
    return current;
  });
  for (const auto& [section, n] : dropped_by_section)
    fmt::print("{}: {} records of earlier schedule revisions dropped\n", section, n);
  fmt::print("{}: {} retired records dropped, {} kept\n", db.file(), dropped, kept);
  return 0;
}

int tune(const tune_request& r, tuner::tune_options o) {
  const std::string share = build_info::share_dir;
  const auto tools = tuner::toolchain::from_json_file(share + "/tuner_paths.json");
  const auto cat = tuner::catalog::from_json_files(share + "/kernels.json", share + "/knob_spaces.json");
  if (r.prune_retired)
    return prune_retired(tuner::database(r.db_dir), cat);
  const auto hw = tuner::this_machine();
  const tuner::database db(r.db_dir);
  o.isa = resolve_isa(o.isa);
  o.dot_product_isa = dot_product_isa(o.isa);
  const auto jobs = tune_jobs(r, o.shape, cat);
  if (jobs.empty())
    throw error("tune: no kernel/shape pairs to tune");
  const auto budgets = r.total_budget.empty() ? std::vector<double>(jobs.size(), seconds_of(r.budget))
                                              : tuner::budget_shares(jobs, seconds_of(r.total_budget));
  const double total_s =
      r.total_budget.empty() ? std::accumulate(budgets.begin(), budgets.end(), 0.0) : seconds_of(r.total_budget);
  const auto [least, most] = std::minmax_element(budgets.begin(), budgets.end());
  fmt::print(stderr, "tuning {} kernel/shape pairs on {} ({}), database {}\n", jobs.size(),
             tuner::hardware_key(hw, o.isa), o.isa, db.file());
  fmt::print(stderr, "budget: {} per pair{}, {} in all: done by about {}\n",
             *least == *most ? clock_text(*least) : clock_text(*least) + " to " + clock_text(*most),
             r.total_budget.empty() ? "" : " (by each kernel's share of a model's run)", clock_text(total_s),
             time_after(total_s));
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& job = jobs[i];
    o.shape = job.shape, o.budget_s = budgets[i];
    const auto res = tuner::tune(tools, cat, job.kernel, o, db, hw);
    for (const auto& why : res.stopped)
      fmt::print("{} {}: stopped: {}\n", job.kernel, job.shape, why);
    if (res.best.status.empty()) {
      fmt::print("{} {}: no verified candidate in {} trials\n", job.kernel, job.shape, res.trials);
      continue;
    }
    fmt::print("{} {}: {} {:.4g} ms ({:.1f} GFLOP/s, {:.1f} GB/s) with {}", job.kernel, job.shape,
               res.best.chosen() ? "chosen" : "best", res.best.median_ms, res.best.gflops, res.best.gbps,
               tuner::knobs_text(res.best.knobs));
    if (res.defaults.verified())
      fmt::print("; default {:.4g} ms ({:.2f}x)", res.defaults.median_ms, res.defaults.median_ms / res.best.median_ms);
    fmt::print("\n");
  }
  if (!tuner::is_gpu(o.isa)) // GPU schedules keep one knob file per API (schedules/knobs/gpu.json)
    write_knob_file(r, jobs, tools, cat, db, hw);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("tuned {} pairs in {} (budget {})\n", jobs.size(), clock_text(took), clock_text(total_s));
  return 0;
}

namespace {
// The (kernel, shape) pairs a comparison measures.
std::vector<std::pair<std::string, std::string>> compare_jobs(const tuner::compare_options& o, bool all,
                                                              const std::string& preset_name,
                                                              const std::string& compute_type) {
  std::vector<std::pair<std::string, std::string>> jobs;
  if (all) {
    for (const auto& e : tuner::typed_shapes(tuner::preset(preset_name), compute_type))
      jobs.emplace_back(e.kernel, e.shape);
  } else if (o.kernel.empty() || o.shape.empty())
    throw error("compare needs --kernel and --shape, or --all");
  else
    jobs.emplace_back(o.kernel, tuner::canonical_shape(o.shape));
  return jobs;
}

// The fastest verified row of a schedule ("auto": of any autoscheduler), or null.
const tuner::compare_row* best_of(const std::vector<tuner::compare_row>& rows, const std::string& which) {
  const tuner::compare_row* b = nullptr;
  for (const auto& r : rows)
    if (r.r.verified() && (r.schedule == which || (which == "auto" && r.r.source.rfind("autoscheduler", 0) == 0)) &&
        (!b || r.r.median_ms < b->r.median_ms))
      b = &r;
  return b;
}

// The summary of a comparison of several shapes: a line each, and counts.
struct compare_summary {
  std::string lines =
      fmt::format("{:<15} {:<44} {:>10} {:>10} {:>12} {:>10} {:>10} {:>9} {:>9}\n", "kernel", "shape", "default ms",
                  "tuned ms", "best auto ms", "blas ms", "onednn ms", "tuned/def", "tuned/auto");
  int with_tuned = 0, not_slower = 0, beats_auto = 0, same_as_default = 0;

  // Speed-ups of the tuned schedule (> 1: tuned is faster); "=" marks a tuned
  // schedule whose knobs are the defaults (the same code: any gap is noise).
  void add(const std::string& k, const std::string& shape, const std::vector<tuner::compare_row>& rows) {
    auto ms = [](const tuner::compare_row* r) { return r ? fmt::format("{:.4g}", r->r.median_ms) : std::string("-"); };
    const auto *def = best_of(rows, "default"), *tuned = best_of(rows, "tuned"), *au = best_of(rows, "auto");
    std::string vs_def = "-", vs_auto = "-";
    if (tuned) {
      ++with_tuned;
      const bool same = def && tuned->r.knobs == def->r.knobs;
      same_as_default += same;
      if (def) {
        vs_def = fmt::format("{}{:.2f}x", same ? "=" : "", def->r.median_ms / tuned->r.median_ms);
        not_slower += same || tuned->r.median_ms <= def->r.median_ms;
      }
      if (au) {
        vs_auto = fmt::format("{:.2f}x", au->r.median_ms / tuned->r.median_ms);
        beats_auto += tuned->r.median_ms < au->r.median_ms;
      }
    }
    lines += fmt::format("{:<15} {:<44} {:>10} {:>10} {:>12} {:>10} {:>10} {:>9} {:>9}\n", k, shape, ms(def), ms(tuned),
                         ms(au), ms(best_of(rows, "blas")), ms(best_of(rows, "onednn")), vs_def, vs_auto);
  }
  void print(std::size_t shapes) const {
    fmt::print("\nsummary (median ms; '-': not measured or not verified; tuned/x: speed-up of tuned over x, '=': "
               "tuned knobs are the defaults)\n{}",
               lines);
    fmt::print("\ntuned: {} of {} kernel shapes have a tuned schedule; {} not slower than the default ({} of them "
               "the default itself); {} faster than every autoscheduler\n",
               with_tuned, shapes, not_slower, same_as_default, beats_auto);
  }
};

// A kernel's compute limit: an int8 or bfloat16 GEMM's dot-product peak
// (vpdpbusd, vdpbf16ps) where it runs the avx512_vnni code, else the FMA peak.
double compute_peak(const std::string& kernel, const tuner::tune_options& m, double fma_peak) {
  const char* kind = kernel.ends_with("_bf16") ? "bf16" : kernel.ends_with("_int8") ? "int8" : nullptr;
  if (!kind || m.dot_product_isa != "avx512_vnni")
    return fma_peak;
  static std::map<std::string, double> measured;
  if (!measured.count(kind)) {
    measured[kind] = machine::dot_peak_gops(kind, m.threads);
    fmt::print("measured {} dot-product peak {:.0f} G ops/s ({} threads)\n", kind, measured[kind],
               m.threads > 0 ? m.threads : machine::online_cpus());
  }
  return measured[kind] > 0 ? measured[kind] : fma_peak;
}
} // namespace

int compare(tuner::compare_options o, const std::string& schedules, const std::string& out_dir, bool all,
            const std::string& preset_name, const std::string& compute_type) {
  const std::string share = build_info::share_dir;
  const auto tools = tuner::toolchain::from_json_file(share + "/tuner_paths.json");
  const auto cat = tuner::catalog::from_json_files(share + "/kernels.json", share + "/knob_spaces.json");
  const auto hw = tuner::this_machine();
  o.measure.isa = resolve_isa(o.measure.isa);
  o.measure.dot_product_isa = dot_product_isa(o.measure.isa);
  if (!schedules.empty()) {
    o.schedules.clear();
    std::stringstream ss(schedules);
    for (std::string s; std::getline(ss, s, ',');)
      o.schedules.push_back(s);
  }
  const auto jobs = compare_jobs(o, all, preset_name, compute_type);
  const double fma_peak = machine::fma_peak_gflops(o.measure.isa, o.measure.threads);
  fmt::print("machine: {} | measured FP32 FMA peak {:.0f} GFLOP/s ({}, {} threads)\n", hw.key(), fma_peak,
             o.measure.isa, o.measure.threads > 0 ? o.measure.threads : machine::online_cpus());
  compare_summary summary;
  for (const auto& [k, shape] : jobs) {
    o.kernel = k, o.shape = shape;
    const double peak = compute_peak(k, o.measure, fma_peak);
    const auto rows = tuner::compare(tools, cat, o, hw);
    const std::string title = k + " " + shape + " (" + o.measure.isa + ")";
    fmt::print("\n{}", tuner::table(title, rows, peak));
    std::string name = k + "_" + shape;
    std::replace(name.begin(), name.end(), ',', '_');
    std::replace(name.begin(), name.end(), '=', '-');
    tuner::write_reports(out_dir, name, title, rows, peak);
    summary.add(k, shape, rows);
  }
  if (jobs.size() > 1)
    summary.print(jobs.size());
  fmt::print("\nreports (CSV, JSON, SVG) in {}\n", out_dir);
  return 0;
}

void print_info(const std::string& dir, const load_options& lo) {
  fmt::print("{}\n", Model::kernel_info());
  fmt::print("schedules: hand-written, knob values from {} (HALFORMER_KNOBS={})\n", build_info::knob_file,
             build_info::knobs);
  std::ifstream knob_in(build_info::knob_file);
  if (!knob_in)
    throw error(std::string("cannot read the build's knob file ") + build_info::knob_file);
  const auto knobs = nlohmann::json::parse(knob_in);
  // The knob-file section of the active code: its widest vector ISA
  // (schedules/knobs.hpp isa_class), so the avx512_vnni code reads avx512's.
  const std::string active = halformer_active_isa(), isa = active == "avx512_vnni" ? "avx512" : active;
  for (const halformer_kernel* kernel = halformer_kernels_cpu(); kernel->name; ++kernel) {
    const std::string k = kernel->name, sched{dsl::kernels::interface_of(k).schedule};
    const auto values = [&](const nlohmann::json& section) {
      std::string text;
      for (const auto& [name, v] : section.items())
        if (name[0] != '_')
          text += (text.empty() ? "" : " ") + name + "=" + v.dump();
      return text;
    };
    fmt::print("  hf_{:<16} {} schedule [{}]: {}\n", k, sched, isa,
               values(knobs.contains(sched) ? knobs[sched].value(isa, nlohmann::json::object()) : nlohmann::json()));
    // Knob sets of shape buckets: specialize() branches inside hf_<k> (schedules/buckets.hpp).
    const auto buckets = knobs.value("_buckets", nlohmann::json::object());
    if (buckets.contains(k))
      for (const auto& [bucket, isas] : buckets[k].items())
        if (bucket[0] != '_' && (isas.contains(isa) || isas.contains("any")))
          fmt::print("    {:<8} bucket: {}\n", bucket, values(isas.contains(isa) ? isas[isa] : isas["any"]));
  }
  fmt::print("Halide: {} (AOT; the kernels need no Halide at run time)\n", halide_version());
  if (!dir.empty()) {
    Model m = Model::load(dir, lo);
    const auto& c = m.config();
    fmt::print("model {}: d_model {}, {} heads, d_ff {}, {}+{} layers, vocab {}/{}, {}, {}\n", dir, c.d_model, c.nhead,
               c.dim_feedforward, c.num_encoder_layers, c.num_decoder_layers, c.src_vocab, c.tgt_vocab,
               c.norm_first ? "pre-LN" : "post-LN", c.activation);
    fmt::print("compute type {} on {}, {} attention keys and values: {:.1f} MB of resident weights; kernels and "
               "their inputs' types:\n",
               m.compute_type(), m.device(), m.kv_cache(), m.weight_bytes() / 1e6);
    for (const auto& k : m.kernels())
      fmt::print("  {}\n", k);
  }
}

} // namespace halformer::cli
