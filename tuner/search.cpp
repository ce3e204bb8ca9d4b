// The search behind `halformer tune` (tuner.hpp: tune()): the hand defaults first,
// random points and Halide's autoschedulers, then mutations of the best few knob
// sets, every candidate measured in child processes and recorded; then a
// confirmation round of the finalists and the default, side by side.
#include "tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <unistd.h>

namespace halformer::tuner {

namespace {
std::string clock_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", int(s) / 60, int(s) % 60);
  return buf;
}

// What a search has measured (resumed from the database), and how it picks the next point.
class search {
public:
  search(const knob_space& space, const tune_options& o) : space_(space), rng_(o.seed) {}

  std::map<knob_set, record> seen;

  const record* best_verified() const {
    const record* b = nullptr;
    for (const auto& [kn, r] : seen)
      if (r.verified() && (!b || r.median_ms < b->median_ms))
        b = &r;
    return b;
  }
  // The fastest verified knob sets (not autoscheduler runs), at most n.
  std::vector<const record*> fastest(std::size_t n) const {
    std::vector<const record*> top;
    for (const auto& [kn, r] : seen)
      if (r.verified() && autoscheduler_of(kn).empty())
        top.push_back(&r);
    std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->median_ms < b->median_ms; });
    if (top.size() > n)
      top.resize(n);
    return top;
  }
  knob_set random_set() {
    knob_set s;
    for (const auto& [name, values] : space_)
      s[name] = values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng_)];
    return s;
  }
  // One or two knobs moved, mostly to a neighbouring value.
  knob_set mutate(knob_set s) {
    const int changes = 1 + int(rng_() % 2);
    for (int i = 0; i < changes; ++i) {
      const auto& [name, values] = space_[rng_() % space_.size()];
      auto pos = std::find(values.begin(), values.end(), s[name]) - values.begin();
      const int step = (rng_() % 2) ? 1 : -1;
      pos = std::clamp<long>(pos + step, 0, long(values.size()) - 1);
      if (rng_() % 4 == 0)
        pos = long(rng_() % values.size());
      s[name] = values[std::size_t(pos)];
    }
    return s;
  }
  // A point not measured yet: a mutation of one of the best few, else a random
  // one, else the first unseen point of the space; false when it is exhausted.
  bool next_unseen(knob_set& cand, std::string& source) {
    const auto top = fastest(4);
    source = "mutation";
    for (int attempt = 0; attempt < 50; ++attempt)
      if (!seen.count(cand = top.empty() ? random_set()
                                         : mutate(top[std::min<std::size_t>(rng_() % 3, top.size() - 1)]->knobs)))
        return true;
    source = "random";
    for (int attempt = 0; attempt < 200; ++attempt)
      if (!seen.count(cand = random_set()))
        return true;
    source = "enumeration";
    std::vector<std::size_t> idx(space_.size(), 0);
    for (bool more = true; more;) {
      for (std::size_t i = 0; i < space_.size(); ++i)
        cand[space_[i].first] = space_[i].second[idx[i]];
      if (!seen.count(cand))
        return true;
      more = false;
      for (std::size_t i = 0; i < space_.size() && !more; ++i)
        if (++idx[i] < space_[i].second.size())
          more = true;
        else
          idx[i] = 0;
    }
    return false;
  }

private:
  const knob_space& space_;
  std::mt19937 rng_;
};

// The live line: candidates done, failures, the best so far against the default, time.
void report(const search& s, const kernel_info& k, const tune_options& o, const tune_result& result,
            const knob_set& defaults, double elapsed, bool tty) {
  const record* b = s.best_verified();
  const auto d = s.seen.find(defaults);
  const double base = d != s.seen.end() && d->second.verified() ? d->second.median_ms : 0;
  char line[512];
  std::snprintf(line, sizeof line, "[tune %s %s %s] %d done (%d failed) | best %.4g ms %.1f GFLOP/s%s | %s / %s",
                k.name.c_str(), o.shape.c_str(), o.isa.c_str(), result.trials, result.failed, b ? b->median_ms : 0.0,
                b ? b->gflops : 0.0,
                base > 0 && b ? (" (" + std::to_string(base / b->median_ms).substr(0, 4) + "x default)").c_str() : "",
                clock_text(elapsed).c_str(), clock_text(o.budget_s).c_str());
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
}

// The confirmation round's candidates: the fastest finalists and the default.
std::vector<const record*> finalists(const search& s, const knob_set& defaults, const tune_options& o) {
  auto top = s.fastest(std::size_t(std::max(0, o.finalists)));
  if (auto d = s.seen.find(defaults);
      d != s.seen.end() && d->second.verified() && std::find(top.begin(), top.end(), &d->second) == top.end())
    top.push_back(&d->second);
  return top;
}

// The builds of the knob sets a confirmation round would take (the default and
// the fastest few), kept from their search measurement: confirming them then
// costs their runs alone, so that a small budget still re-measures the default
// beside the best (the default, measured first, can run cold: a Zen 3's prefill
// attention default measured 9.3 ms in the search, 6.7-7.4 ms side by side).
using kept_builds = std::map<knob_set, built_candidate>;

// What a confirmation round of these finalists will cost: a build each (but for
// those kept) and `rounds` runs each, as long as their search measurements took
// (a resumed record without timings counts as the average of those with).
struct confirm_cost {
  double build_s = 0, run_s = 0; // summed over the finalists
  double total(int rounds) const { return build_s + rounds * run_s; }
};
confirm_cost cost_of(const std::vector<const record*>& top, const kept_builds& kept) {
  confirm_cost c;
  double timed_build_s = 0; // every timed finalist's build, kept or not: the average for the untimed
  int timed = 0, untimed = 0;
  for (const record* r : top) {
    if (!r->settings.contains("build_s")) {
      ++untimed; // resumed, so never kept
      continue;
    }
    const double build_s = r->settings["build_s"].get<double>();
    timed_build_s += build_s;
    c.build_s += kept.contains(r->knobs) ? 0.0 : build_s;
    c.run_s += r->settings["run_s"].get<double>();
    ++timed;
  }
  if (timed > 0 && untimed > 0)
    c.build_s += timed_build_s / timed * untimed, c.run_s += c.run_s / timed * untimed;
  return c;
}

// Keeps the builds of the knob sets that are finalists now, and drops the rest.
void keep_finalists(kept_builds& kept, const std::vector<const record*>& top) {
  for (auto it = kept.begin(); it != kept.end();)
    it = std::any_of(top.begin(), top.end(), [&](const record* r) { return r->knobs == it->first; }) ? std::next(it)
                                                                                                     : kept.erase(it);
}

double seconds_left(const tune_options& o) {
  return std::chrono::duration<double>(*o.deadline - std::chrono::steady_clock::now()).count();
}

// Confirmation: the search keeps each candidate's one measurement, and the
// lowest of many noisy medians is optimistic. The finalists and the default are
// measured again, side by side over as many rounds as the budget has left (at
// most confirm_rounds); the build trusts these records.
void confirm(const toolchain& t, const kernel_info& k, tune_options o, const database& db, const hardware& hw,
             const search& s, const knob_set& defaults, kept_builds& kept, tune_result& result) {
  const auto top = finalists(s, defaults, o);
  if (o.confirm_rounds <= 0 || top.size() <= 1)
    return;
  const confirm_cost cost = cost_of(top, kept);
  const double left = seconds_left(o);
  o.confirm_rounds = std::min(o.confirm_rounds, cost.run_s > 0 ? int((left - cost.build_s) / cost.run_s) : 1);
  if (o.confirm_rounds < 1) {
    std::fprintf(stderr, "[tune %s %s] no time left to confirm the finalists (%.0f s needed, %.0f s left)\n",
                 k.name.c_str(), o.shape.c_str(), cost.total(1), std::max(0.0, left));
    return;
  }
  std::vector<built_candidate> rebuilt;
  rebuilt.reserve(top.size());
  std::vector<const built_candidate*> built;
  for (const record* r : top)
    if (auto kb = kept.find(r->knobs); kb != kept.end())
      built.push_back(&kb->second);
    else
      built.push_back(&rebuilt.emplace_back(build(t, k, r->knobs, o, hw, "confirm")));
  std::vector<timed_run> runs;
  for (std::size_t i = 0; i < built.size(); ++i)
    runs.push_back({"finalist " + std::to_string(i + 1) + "/" + std::to_string(built.size()), [&, i] {
                      record r = run(*built[i], o);
                      r.source = "confirm"; // a kept build carries its search source
                      return r;
                    }});
  const auto confirmed = interleaved(runs, o.confirm_rounds, "tune " + k.name + " " + o.shape + " confirming");
  const record* chosen = choose_confirmed(confirmed, defaults, o.adopt_margin);
  const std::string batch = now_iso() + "/" + std::to_string(::getpid());
  double margin = o.adopt_margin; // the one the choice applied
  for (const auto& r : confirmed)
    if (r.verified() && r.knobs == defaults)
      margin = adopt_margin(r, o.adopt_margin);
  for (const auto& r : confirmed) {
    record rr = r;
    rr.settings["confirm_rounds"] = o.confirm_rounds;
    rr.settings["confirm_batch"] = batch;
    rr.settings["chosen"] = &r == chosen;
    rr.settings["adopt_margin"] = margin;
    rr.settings["rebuilt"] = !kept.contains(r.knobs);
    db.append(rr);
    if (r.verified() && r.knobs == defaults)
      result.defaults = r;
  }
  if (chosen) {
    result.best = *chosen;
    result.best.settings["chosen"] = true;
  }
}
using candidate_queue = std::vector<std::pair<knob_set, std::string>>;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// Resume: every record of this kernel, shape, target and machine counts as
// evaluated (but one the budget stopped may run again).
void resume(search& s, const std::vector<record>& records, const kernel_info& k, const tune_options& o,
            const std::string& target, const std::string& hw_key) {
  for (auto& r : records)
    if (r.kernel == k.name && r.shape == o.shape && r.target == target && r.hardware == hw_key &&
        r.schedule_revision == k.revision && !r.confirmed() && r.status != "over_budget")
      s.seen[r.knobs] = r;
}

// The candidates measured first: the default, seeds from the most similar
// hardware (where this machine has no records here), random points and
// Halide's CPU autoschedulers (they have no knobs to mutate, so they come after
// the random start; GPU schedules are searched from the knobs alone).
candidate_queue first_candidates(search& s, const std::vector<record>& records, const kernel_info& k,
                                 const tune_options& o, const knob_set& defaults, const std::string& target,
                                 const std::string& hw_key, const knob_space& space) {
  candidate_queue queue{{defaults, "default"}};
  if (s.seen.empty() && !is_gpu(o.isa))
    for (const auto& seed : seeds_from_similar_hardware(records, k, o.shape, target, hw_key, space, 3)) {
      queue.emplace_back(seed.knobs, "seed");
      std::fprintf(stderr, "[tune %s %s] seeded with %s, tuned on %s\n", k.name.c_str(), o.shape.c_str(),
                   knobs_text(seed.knobs).c_str(), seed.hardware.c_str());
    }
  for (int i = 0; i < o.initial_random; ++i)
    queue.emplace_back(s.random_set(), "random");
  if (!is_gpu(o.isa))
    for (const auto& a : autoschedulers)
      queue.emplace_back(knob_set{{"_autoscheduler:" + a, 1}}, "autoscheduler:" + a);
  return queue;
}

// The search's best and default, then the confirmation round, which may run
// until `end`.
void conclude(const toolchain& t, const kernel_info& k, const tune_options& o,
              std::chrono::steady_clock::time_point end, const database& db, const hardware& hw, search& s,
              const knob_set& defaults, kept_builds& kept, tune_result& result) {
  if (const record* b = s.best_verified())
    result.best = *b;
  if (auto d = s.seen.find(defaults); d != s.seen.end())
    result.defaults = d->second;
  tune_options confirm_o = o;
  confirm_o.deadline = end;
  confirm(t, k, confirm_o, db, hw, s, defaults, kept, result);
}

// The next candidate: the queue's first, then the search's next unseen point;
// false when the knob space is exhausted.
bool next_candidate(candidate_queue& queue, search& s, knob_set& cand, std::string& source) {
  if (queue.empty())
    return s.next_unseen(cand, source);
  std::tie(cand, source) = queue.front();
  queue.erase(queue.begin());
  return true;
}
} // namespace

tune_result tune(const toolchain& t, const catalog& c, const std::string& kernel_name, const tune_options& o,
                 const database& db, const hardware& hw) {
  const kernel_info k = kernel_for(c, kernel_name, o.isa);
  const knob_space space = space_at(c, k, o.isa, o.shape);
  const std::string target = target_of_isa(o.isa), hw_key = hardware_key(hw, o.isa);
  search s(space, o);
  const auto records = db.load();
  resume(s, records, k, o, target, hw_key);
  tune_result result;
  // The baseline is the set a build runs at this shape: its bucket's hand set
  // (the knobs this shape's calls do not run keep the knob file's values).
  const knob_set defaults = restricted_to(hand_knobs_at(t, k, o.shape, o.isa), space);
  auto queue = first_candidates(s, records, k, o, defaults, target, hw_key, space);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // The search stops where the last trial's duration would run into the time the
  // confirmation round needs; a trial (an autoscheduler's compile) stops there.
  const auto end = start + seconds(o.budget_s);
  kept_builds kept;
  const auto confirm_reserve = [&] {
    const auto top = finalists(s, defaults, o);
    return top.size() > 1 ? cost_of(top, kept).total(o.confirm_rounds) : 0.0;
  };
  tune_options trial_o = o;
  double last_trial_s = 0;
  const bool tty = isatty(2);
  while (result.trials < o.max_trials && elapsed() + last_trial_s + confirm_reserve() < o.budget_s) {
    knob_set cand;
    std::string source;
    if (!next_candidate(queue, s, cand, source)) {
      std::fprintf(stderr, "[tune %s] the knob space is exhausted\n", k.name.c_str());
      break;
    }
    if (s.seen.count(cand))
      continue;
    trial_o.deadline = end - seconds(confirm_reserve());
    const double t0 = elapsed();
    built_candidate built;
    record r = measure(t, k, cand, trial_o, hw, source, built);
    last_trial_s = elapsed() - t0;
    db.append(r);
    ++result.trials;
    result.failed += r.verified() ? 0 : 1;
    if (r.status == "over_budget") { // not a verdict on the candidate: a later run may try it again
      result.stopped.push_back(r.detail);
      std::fprintf(stderr, "%s[tune %s %s] %s\n", tty ? "\n" : "", k.name.c_str(), o.shape.c_str(), r.detail.c_str());
      continue;
    }
    s.seen[cand] = r;
    if (r.verified() && autoscheduler_of(cand).empty())
      kept.emplace(cand, std::move(built));
    keep_finalists(kept, finalists(s, defaults, o));
    report(s, k, o, result, defaults, elapsed(), tty);
  }
  if (tty)
    std::fprintf(stderr, "\n");
  conclude(t, k, o, end, db, hw, s, defaults, kept, result);
  return result;
}

} // namespace halformer::tuner
