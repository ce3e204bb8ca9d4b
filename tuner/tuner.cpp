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

namespace {
std::string now_iso() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}
std::string clock_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", int(s) / 60, int(s) % 60);
  return buf;
}
// A candidate step failed: its status, and the child's description and stderr.
void set_failure(record& r, const std::string& status, const process_result& p) {
  r.status = status;
  r.detail = p.describe() + ": " + (p.err.size() > 600 ? p.err.substr(0, 600) + "..." : p.err);
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
                               "target=" + r.target + "-no_runtime",
                               "knob_file=" + (is_gpu(o.isa) ? t.gpu_knob_file : t.knob_file)};
  if (const std::string kt = generator_knobs(knobs); !kt.empty())
    gen.push_back("knobs=" + kt);
  gen.insert(gen.end(), k.params.begin(), k.params.end());
  gen.insert(gen.end(), generator_args.begin(), generator_args.end());
  if (const std::string a = autoscheduler_of(knobs); !a.empty()) {
    std::string lower = a;
    std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    for (const std::string& arg :
         std::vector<std::string>{"-p", t.autoscheduler_dir + "/libautoschedule_" + lower + ".so", "autoscheduler=" + a,
                                  "autoscheduler.parallelism=" + std::to_string(o.threads > 0 ? o.threads : cores),
                                  "estimates=" + estimates_of(o.shape)})
      gen.push_back(arg);
  }
  auto fail = [&](const std::string& status, const process_result& p) {
    set_failure(r, status, p);
    return std::move(c);
  };
  if (auto p = run_process(gen, o.candidate_timeout_s); !p.ok())
    return fail("compile_error", p);
  const std::string exe = c.dir + "/harness";
  if (auto p = run_process({t.cxx, "-o", exe, t.harness_dir + "/libtuner_harness_" + k.name + ".a",
                            c.dir + "/candidate.a", t.runtime_lib, "-lpthread", "-ldl", "-lm"},
                           o.candidate_timeout_s);
      !p.ok())
    return fail("link_error", p);
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
  const auto p = run_process(argv, o.candidate_timeout_s);
  auto fail = [&](const std::string& status) {
    set_failure(r, status, p);
    return r;
  };
  if (p.timed_out)
    return fail("timeout");
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
  return out;
}

std::vector<record> interleaved(const std::vector<timed_run>& runs, int rounds, const std::string& what) {
  std::vector<std::vector<record>> results(runs.size());
  const bool tty = isatty(2);
  for (int round = 0; round < rounds; ++round)
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const std::size_t c = (i + std::size_t(round)) % runs.size();
      if (!results[c].empty() && !results[c].back().verified())
        continue; // failed once: not run again
      std::fprintf(stderr, tty ? "\r[%s] round %d/%d: %s\033[K" : "[%s] round %d/%d: %s\n", what.c_str(), round + 1,
                   rounds, runs[c].name.c_str());
      results[c].push_back(runs[c].once());
    }
  if (tty)
    std::fprintf(stderr, "\n");
  std::vector<record> out;
  for (const auto& r : results)
    out.push_back(pool(r));
  return out;
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
  if (winner && def && winner != def && winner->median_ms > def->median_ms * (1 - margin))
    return def;
  return winner;
}

record measure(const toolchain& t, const kernel_info& k, const knob_set& knobs, const tune_options& o,
               const hardware& hw, const std::string& source, const std::vector<std::string>& generator_args) {
  const built_candidate c = build(t, k, knobs, o, hw, source, generator_args);
  return run(c, o);
}

tune_result tune(const toolchain& t, const catalog& c, const std::string& kernel_name, const tune_options& o,
                 const database& db, const hardware& hw) {
  const kernel_info k = kernel_for(c, kernel_name, o.isa);
  const knob_space& space = space_for(c, k, o.isa);
  const std::string target = target_of_isa(o.isa), hw_key = hardware_key(hw, o.isa);
  std::mt19937 rng(o.seed);

  // Resume: every record of this kernel, shape, target and machine counts as evaluated.
  std::map<knob_set, record> seen;
  for (auto& r : db.load())
    if (r.kernel == k.name && r.shape == o.shape && r.target == target && r.hardware == hw_key &&
        r.schedule_revision == k.revision && !r.confirmed())
      seen[r.knobs] = r;

  tune_result result;
  const knob_set defaults = default_knobs(t, k.knob_section, o.isa);
  auto best_verified = [&]() -> const record* {
    const record* b = nullptr;
    for (const auto& [kn, r] : seen)
      if (r.verified() && (!b || r.median_ms < b->median_ms))
        b = &r;
    return b;
  };
  auto random_set = [&] {
    knob_set s;
    for (const auto& [name, values] : space)
      s[name] = values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
    return s;
  };
  auto mutate = [&](knob_set s) {
    const int changes = 1 + int(rng() % 2);
    for (int i = 0; i < changes; ++i) {
      const auto& [name, values] = space[rng() % space.size()];
      auto pos = std::find(values.begin(), values.end(), s[name]) - values.begin();
      const int step = (rng() % 2) ? 1 : -1; // a neighbouring value, mostly
      pos = std::clamp<long>(pos + step, 0, long(values.size()) - 1);
      if (rng() % 4 == 0)
        pos = long(rng() % values.size());
      s[name] = values[std::size_t(pos)];
    }
    return s;
  };

  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::pair<knob_set, std::string>> queue{{defaults, "default"}};
  for (int i = 0; i < o.initial_random; ++i)
    queue.emplace_back(random_set(), "random");
  // Halide's CPU autoschedulers are candidates too (seeded once; they have no knobs
  // to mutate, so they come after the random start). GPU schedules are searched
  // from the knobs alone.
  if (!is_gpu(o.isa))
    for (const auto& a : autoschedulers)
      queue.emplace_back(knob_set{{"_autoscheduler:" + a, 1}}, "autoscheduler:" + a);
  double last_trial_s = 0;
  const bool tty = isatty(2);
  while (result.trials < o.max_trials && elapsed() + last_trial_s < o.budget_s) {
    knob_set cand;
    std::string source;
    if (!queue.empty()) {
      std::tie(cand, source) = queue.front();
      queue.erase(queue.begin());
    } else {
      // Evolution: mutate one of the best few verified candidates.
      std::vector<const record*> top;
      for (const auto& [kn, r] : seen)
        if (r.verified() && autoscheduler_of(kn).empty())
          top.push_back(&r);
      std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
      if (top.size() > 4)
        top.resize(4);
      source = "mutation";
      bool fresh = false;
      for (int attempt = 0; attempt < 50 && !fresh; ++attempt) {
        cand = top.empty() ? random_set() : mutate(top[std::min<std::size_t>(rng() % 3, top.size() - 1)]->knobs);
        fresh = !seen.count(cand);
      }
      for (int attempt = 0; attempt < 200 && !fresh; ++attempt) {
        cand = random_set(), source = "random";
        fresh = !seen.count(cand);
      }
      if (!fresh) { // nearly exhausted: enumerate the space for an unseen point
        std::vector<std::size_t> idx(space.size(), 0);
        for (bool more = true; more && !fresh;) {
          for (std::size_t i = 0; i < space.size(); ++i)
            cand[space[i].first] = space[i].second[idx[i]];
          fresh = !seen.count(cand);
          more = false;
          for (std::size_t i = 0; i < space.size() && !more; ++i)
            if (++idx[i] < space[i].second.size())
              more = true;
            else
              idx[i] = 0;
        }
        source = "enumeration";
        if (!fresh) {
          std::fprintf(stderr, "[tune %s] the knob space is exhausted\n", k.name.c_str());
          break;
        }
      }
    }
    if (seen.count(cand))
      continue;
    const double t0 = elapsed();
    record r = measure(t, k, cand, o, hw, source);
    last_trial_s = elapsed() - t0;
    db.append(r);
    seen[cand] = r;
    ++result.trials;
    if (!r.verified())
      ++result.failed;
    const record* b = best_verified();
    const auto d = seen.find(defaults);
    const double base = d != seen.end() && d->second.verified() ? d->second.median_ms : 0;
    char line[512];
    std::snprintf(line, sizeof line, "[tune %s %s %s] %d done (%d failed) | best %.4g ms %.1f GFLOP/s%s | %s / %s",
                  k.name.c_str(), o.shape.c_str(), o.isa.c_str(), result.trials, result.failed, b ? b->median_ms : 0.0,
                  b ? b->gflops : 0.0,
                  base > 0 && b ? (" (" + std::to_string(base / b->median_ms).substr(0, 4) + "x default)").c_str() : "",
                  clock_text(elapsed()).c_str(), clock_text(o.budget_s).c_str());
    std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
  }
  if (tty)
    std::fprintf(stderr, "\n");
  if (const record* b = best_verified())
    result.best = *b;
  if (auto d = seen.find(defaults); d != seen.end())
    result.defaults = d->second;

  // Confirmation: the search keeps each candidate's one measurement, and the
  // lowest of many noisy medians is optimistic. The finalists and the default are
  // measured again, side by side over several rounds; the build trusts these records.
  std::vector<const record*> top;
  for (const auto& [kn, r] : seen)
    if (r.verified() && autoscheduler_of(kn).empty())
      top.push_back(&r);
  std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
  if (top.size() > std::size_t(std::max(0, o.finalists)))
    top.resize(std::size_t(std::max(0, o.finalists)));
  if (auto d = seen.find(defaults);
      d != seen.end() && d->second.verified() && std::find(top.begin(), top.end(), &d->second) == top.end())
    top.push_back(&d->second);
  if (o.confirm_rounds > 0 && top.size() > 1) {
    std::vector<built_candidate> built;
    for (const record* r : top)
      built.push_back(build(t, k, r->knobs, o, hw, "confirm"));
    std::vector<timed_run> runs;
    for (std::size_t i = 0; i < built.size(); ++i)
      runs.push_back({"finalist " + std::to_string(i + 1) + "/" + std::to_string(built.size()),
                      [&, i] { return run(built[i], o); }});
    const auto confirmed = interleaved(runs, o.confirm_rounds, "tune " + k.name + " " + o.shape + " confirming");
    const record* chosen = choose_confirmed(confirmed, defaults, o.adopt_margin);
    const record* def = nullptr;
    for (const auto& r : confirmed)
      if (r.verified() && r.knobs == defaults)
        def = &r;
    const std::string batch = now_iso() + "/" + std::to_string(::getpid());
    for (const auto& r : confirmed) {
      record rr = r;
      rr.settings["confirm_rounds"] = o.confirm_rounds;
      rr.settings["confirm_batch"] = batch;
      rr.settings["chosen"] = &r == chosen;
      rr.settings["adopt_margin"] = o.adopt_margin;
      db.append(rr);
    }
    if (def)
      result.defaults = *def;
    if (chosen) {
      result.best = *chosen;
      result.best.settings["chosen"] = true;
    }
  }
  return result;
}

} // namespace halformer::tuner
