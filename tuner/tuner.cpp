#include "tuner.hpp"

#include "halformer/error.hpp"
#include "halformer/versions.hpp"
#include "process.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace halformer::tuner {

namespace fs = std::filesystem;
using nlohmann::json;

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

step_limit step_limit_of(const tune_options& o) {
  if (!o.deadline)
    return {o.candidate_timeout_s, false};
  const double left = std::chrono::duration<double>(*o.deadline - std::chrono::steady_clock::now()).count();
  if (left >= o.candidate_timeout_s)
    return {o.candidate_timeout_s, false};
  return {std::max(0.0, left), true};
}

namespace {
// A candidate step failed: its status, and the child's description and stderr.
void set_failure(record& r, const std::string& status, const process_result& p) {
  r.status = status;
  r.detail = p.describe() + ": " + (p.err.size() > 600 ? p.err.substr(0, 600) + "..." : p.err);
}

// A child step that ran out of time: past the per-step limit (a verdict on the
// candidate), or stopped at the end of the budget (not one).
void set_timeout(record& r, const std::string& step, const step_limit& limit, const process_result& p) {
  if (!limit.by_deadline)
    return set_failure(r, step == "run" ? "timeout" : step + "_error", p);
  const std::string a = autoscheduler_of(r.knobs);
  char left[32];
  std::snprintf(left, sizeof left, "%.1f", limit.seconds);
  r.status = "over_budget";
  r.detail = (a.empty() ? "the candidate's " + step : a + "'s " + step) + " could not finish in the " + left +
             " s left of the budget, and was stopped";
}

// Runs one child step of a candidate within its limit; false (and `r` says why) if it failed.
bool run_step(record& r, const std::string& step, const std::vector<std::string>& argv, const tune_options& o,
              process_result* out = nullptr) {
  const step_limit limit = step_limit_of(o);
  process_result p = run_process(argv, limit.seconds);
  const bool ok = p.ok();
  if (p.timed_out)
    set_timeout(r, step, limit, p);
  else if (!ok && step != "run")
    set_failure(r, step + "_error", p);
  if (out)
    *out = std::move(p);
  return ok;
}
} // namespace

built_candidate& built_candidate::operator=(built_candidate&& o) noexcept {
  std::swap(r, o.r), std::swap(dir, o.dir), std::swap(exe, o.exe);
  return *this;
}
built_candidate::~built_candidate() {
  if (!dir.empty()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
}

built_candidate build(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
                      const hardware& hw, const std::string& source, const std::vector<std::string>& generator_args) {
  static int serial = 0;
  built_candidate c;
  record& r = c.r;
  r.kernel = k.name, r.knob_section = k.knob_section, r.shape = o.shape, r.target = target_of_isa(o.isa);
  r.hardware = hardware_key(hw, o.isa), r.halformer_version = halformer_version, r.halide_version = halide_version();
  r.knobs = knobs, r.source = source, r.when = now_iso(), r.schedule_revision = k.revision;
  r.settings = {{"threads", o.threads},     {"samples", o.samples}, {"min_sample_ms", o.min_sample_ms},
                {"input_rotation_mib", 64}, {"warmup_calls", 3},    {"verify_tolerance", 1e-4}};
  const std::string target = measured_target(k, o);
  if (target != r.target) // the record's key stays the knob section's target
    r.settings["measured_target"] = target;
  c.dir = t.work_dir + "/" + k.name + "-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  fs::create_directories(c.dir);
  std::vector<std::string> gen{t.generator,
                               "-g",
                               k.generator,
                               "-f",
                               "candidate",
                               "-e",
                               "static_library,c_header",
                               "-o",
                               c.dir,
                               "target=" + target + "-no_runtime",
                               "knob_file=" + (is_gpu(o.isa) ? t.gpu_knob_file : t.knob_file)};
  if (const std::string kt = generator_knobs(knobs); !kt.empty())
    gen.push_back("knobs=" + kt);
  gen.insert(gen.end(), k.params.begin(), k.params.end());
  gen.insert(gen.end(), generator_args.begin(), generator_args.end());
  if (const std::string a = autoscheduler_of(knobs); !a.empty()) {
    std::string lower = a;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    const int cores = machine::online_cpus();
    for (const std::string& arg :
         std::vector<std::string>{"-p", t.autoscheduler_dir + "/libautoschedule_" + lower + ".so", "autoscheduler=" + a,
                                  "autoscheduler.parallelism=" + std::to_string(o.threads > 0 ? o.threads : cores),
                                  "estimates=" + estimates_of(o.shape)})
      gen.push_back(arg);
  }
  if (!run_step(r, "compile", gen, o))
    return c;
  const std::string exe = c.dir + "/harness";
  if (!run_step(r, "link",
                {t.cxx, "-o", exe, t.harness_dir + "/libtuner_harness_" + k.name + ".a", c.dir + "/candidate.a",
                 t.runtime_lib, "-lpthread", "-ldl", "-lm"},
                o))
    return c;
  c.exe = exe;
  return c;
}

record run(const built_candidate& c, const tune_options& o) {
  record r = c.r;
  if (!c.ok())
    return r;
  r.when = now_iso();
  std::vector<std::string> argv{c.exe,       o.shape,
                                "--threads", std::to_string(o.threads),
                                "--samples", std::to_string(o.samples),
                                "--min-ms",  std::to_string(o.min_sample_ms)};
  if (is_gpu(o.isa))
    argv.insert(argv.end(), {"--device", o.isa});
  process_result p;
  run_step(r, "run", argv, o, &p);
  auto fail = [&](const std::string& status) {
    set_failure(r, status, p);
    return r;
  };
  if (p.timed_out)
    return r;
  if (p.signal)
    return fail("crash");
  json j;
  try {
    j = json::parse(p.out);
  } catch (const std::exception&) {
    return fail(p.exit_code == 2 ? "bad_shape" : "crash");
  }
  r.status = j.value("status", "crash");
  r.max_error = j.value("max_error", 0.0);
  if (r.status == "ok") {
    r.median_ms = j.at("median_ms"), r.min_ms = j.at("min_ms"), r.max_ms = j.at("max_ms");
    r.gflops = j.at("gflops"), r.gbps = j.at("gbps");
    r.settings["input_sets"] = j.at("input_sets");
  } else {
    r.detail = p.out;
  }
  return r;
}

record pool(const std::vector<record>& runs) {
  if (runs.empty())
    throw error("pool: no runs");
  for (const auto& r : runs)
    if (!r.verified())
      return r;
  record out = runs.front();
  std::vector<double> medians;
  for (const auto& r : runs) {
    medians.push_back(r.median_ms);
    out.min_ms = std::min(out.min_ms, r.min_ms), out.max_ms = std::max(out.max_ms, r.max_ms);
    out.max_error = std::max(out.max_error, r.max_error);
  }
  std::sort(medians.begin(), medians.end());
  const double m = medians.size() % 2 ? medians[medians.size() / 2]
                                      : 0.5 * (medians[medians.size() / 2 - 1] + medians[medians.size() / 2]);
  out.gflops *= runs.front().median_ms / m, out.gbps *= runs.front().median_ms / m;
  out.median_ms = m;
  out.settings["runs"] = int(runs.size());
  out.settings["run_spread"] = (medians.back() - medians.front()) / m;
  return out;
}

std::vector<record> interleaved(const std::vector<timed_run>& runs, int rounds, const std::string& what) {
  std::vector<std::vector<record>> results(runs.size());
  const bool tty = isatty(2);
  record stopped; // the run the budget's end cut short: no more rounds, and it does not count
  for (int round = 0; round < rounds && stopped.status.empty(); ++round)
    for (std::size_t i = 0; i < runs.size() && stopped.status.empty(); ++i) {
      const std::size_t c = (i + std::size_t(round)) % runs.size();
      if (!results[c].empty() && !results[c].back().verified())
        continue; // failed once: not run again
      std::fprintf(stderr, tty ? "\r[%s] round %d/%d: %s\033[K" : "[%s] round %d/%d: %s\n", what.c_str(), round + 1,
                   rounds, runs[c].name.c_str());
      record r = runs[c].once();
      (r.status == "over_budget" ? stopped : results[c].emplace_back()) = std::move(r);
    }
  if (tty)
    std::fprintf(stderr, "\n");
  std::vector<record> out;
  for (const auto& r : results)
    out.push_back(r.empty() ? stopped : pool(r));
  return out;
}

double adopt_margin(const record& defaults, double margin) {
  const auto& s = defaults.settings;
  return s.is_object() && s.contains("run_spread") ? std::max(margin, s["run_spread"].get<double>()) : margin;
}

const record* choose_confirmed(const std::vector<record>& confirmed, const knob_set& defaults, double margin) {
  const record *winner = nullptr, *def = nullptr;
  for (const auto& r : confirmed)
    if (r.verified()) {
      if (!winner || r.median_ms < winner->median_ms)
        winner = &r;
      if (r.knobs == defaults)
        def = &r;
    }
  if (winner && def && winner != def && winner->median_ms > def->median_ms * (1 - adopt_margin(*def, margin)))
    return def;
  return winner;
}

record measure(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
               const hardware& hw, const std::string& source, built_candidate& built) {
  const auto seconds_since = [](auto t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const auto t0 = std::chrono::steady_clock::now();
  built = build(t, k, knobs, o, hw, source);
  const double build_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  record r = run(built, o);
  r.settings["build_s"] = build_s;
  r.settings["run_s"] = seconds_since(t1);
  return r;
}

record measure(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
               const hardware& hw, const std::string& source) {
  built_candidate c;
  return measure(t, k, knobs, o, hw, source, c);
}

} // namespace halformer::tuner
