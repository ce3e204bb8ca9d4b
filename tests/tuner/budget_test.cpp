// A tuning budget is kept: no child step (an autoscheduler's compile included)
// outlives it, and the confirmation round fits in it. A machine without records
// starts its search from the most similar hardware's, measured here. A total
// budget is divided by where a model spends its time.
#include "database.hpp"
#include "presets.hpp"
#include "support.hpp"
#include "tuner.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>

using namespace halformer::tuner;
using namespace halformer::tuner::testing;

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

TEST_CASE("an autoscheduler that cannot finish in the budget is stopped and reported", "[tuner][budget]") {
  temp_dir work("budget_stop");
  toolchain t = real_tools(work.path);
  t.generator = FAKE_GENERATOR; // its autoscheduler runs never finish
  auto o = small_layernorm();
  o.budget_s = 4, o.candidate_timeout_s = 600, o.initial_random = 0; // the budget, not the step limit, must stop it
  database db(work.path + "/db");
  const auto start = std::chrono::steady_clock::now();
  const auto r = tune(t, real_catalog(), "layernorm", o, db, this_machine());
  const double took = seconds_since(start);
  INFO("took " << took << " s");
  CHECK(took <= o.budget_s * 1.1);
  REQUIRE(r.stopped.size() == 1);
  CHECK_THAT(r.stopped[0], Catch::Contains("Adams2019") && Catch::Contains("left of the budget"));
  const auto records = db.load();
  CHECK(std::count_if(records.begin(), records.end(), [](const record& x) { return x.status == "over_budget"; }) == 1);

  // A budget's stop is not a verdict: a resumed search may run that autoscheduler again.
  o.budget_s = 3;
  const auto again = tune(t, real_catalog(), "layernorm", o, db, this_machine());
  REQUIRE(again.stopped.size() == 1);
  CHECK_THAT(again.stopped[0], Catch::Contains("Adams2019"));
}

TEST_CASE("a search and its confirmation round end within the budget", "[tuner][budget]") {
  temp_dir work("budget_fit");
  const toolchain t = real_tools(work.path);
  auto o = small_layernorm();
  o.budget_s = 15, o.max_trials = 1000;
  database db(work.path + "/db");
  const auto start = std::chrono::steady_clock::now();
  const auto r = tune(t, real_catalog(), "layernorm", o, db, this_machine());
  const double took = seconds_since(start);
  INFO("took " << took << " s, " << r.trials << " trials");
  CHECK(took <= o.budget_s * 1.1);
  CHECK(r.trials >= 2);
  CHECK(r.best.confirmed()); // the search left the confirmation round its time
  for (const auto& rec : db.load())
    if (rec.source != "confirm") {
      CHECK(rec.settings.value("build_s", -1.0) > 0); // what the confirmation's reserve is estimated from
      CHECK(rec.settings.value("run_s", -1.0) >= 0);
    }
}

TEST_CASE("a confirmation round runs the search's own builds again; a resumed search's are rebuilt",
          "[tuner][budget]") {
  temp_dir work("confirm_kept");
  const toolchain t = real_tools(work.path);
  auto o = small_layernorm();
  o.budget_s = 120, o.max_trials = 3, o.initial_random = 2;
  database db(work.path + "/db");
  const auto confirmations = [&] {
    std::vector<record> c;
    for (const auto& rec : db.load())
      if (rec.confirmed())
        c.push_back(rec);
    return c;
  };
  const auto first = tune(t, real_catalog(), "layernorm", o, db, this_machine());
  REQUIRE(first.best.confirmed());
  const auto kept = confirmations();
  REQUIRE(kept.size() >= 2); // the default and at least one candidate
  for (const auto& rec : kept)
    CHECK(rec.settings.value("rebuilt", true) == false);
  CHECK(std::any_of(kept.begin(), kept.end(), [&](const record& r) { return r.knobs == first.defaults.knobs; }));

  // Resumed: the earlier measurements have no build in this process.
  o.max_trials = 1;
  tune(t, real_catalog(), "layernorm", o, db, this_machine());
  const auto all = confirmations();
  REQUIRE(all.size() > kept.size());
  CHECK(std::any_of(all.begin() + std::ptrdiff_t(kept.size()), all.end(),
                    [](const record& r) { return r.settings.value("rebuilt", false); }));
}

namespace {
record tuned_elsewhere(const std::string& hardware, const std::string& target, const knob_set& knobs, double ms) {
  record r;
  r.kernel = "layernorm", r.knob_section = "layernorm", r.shape = small_layernorm().shape;
  r.target = target, r.hardware = hardware, r.knobs = knobs, r.status = "ok", r.median_ms = ms;
  r.source = "random", r.schedule_revision = real_catalog().kernel("layernorm").revision;
  return r;
}
knob_set layernorm_knobs(int rows, int vectors) {
  return {{"rows_per_task", rows}, {"vectorize_reductions", 1}, {"vectors", vectors}};
}
} // namespace

TEST_CASE("seeds come from the most similar hardware, best first", "[tuner][seed]") {
  const auto c = real_catalog();
  const auto& k = c.kernel("layernorm");
  const std::string shape = small_layernorm().shape, avx2 = target_of_isa("avx2"), sse = target_of_isa("sse41");
  const std::string here = "AMD EPYC|avx,avx2,fma,sse4_1|2";
  std::vector<record> db{
      tuned_elsewhere("Intel Xeon|avx,avx2,avx512f,fma,sse4_1|8", target_of_isa("avx512"), layernorm_knobs(1, 1), 1),
      tuned_elsewhere("AMD EPYC|avx,avx2,fma,sse4_1|4", avx2, layernorm_knobs(4, 1), 2.0),
      tuned_elsewhere("AMD EPYC|avx,avx2,fma,sse4_1|4", avx2, layernorm_knobs(16, 2), 1.5),
      tuned_elsewhere("AMD EPYC|avx,avx2,fma,sse4_1|4", avx2, layernorm_knobs(16, 2), 1.4), // same knobs: one seed
      tuned_elsewhere(here, avx2, layernorm_knobs(2, 2), 0.1), // this machine's own: never a seed
      tuned_elsewhere("AMD EPYC|avx,avx2,fma,sse4_1|4", avx2, {{"rows_per_task", 3}}, 0.1), // outside the space
  };
  db.back().knobs["not_a_knob"] = 1;
  const auto space = c.spaces.at("layernorm");
  const auto seeds = seeds_from_similar_hardware(db, k, shape, avx2, here, space, 3);
  REQUIRE(seeds.size() == 2);
  CHECK(seeds[0].knobs == layernorm_knobs(16, 2)); // the fastest first
  CHECK(seeds[1].knobs == layernorm_knobs(4, 1));
  CHECK(seeds[0].hardware == "AMD EPYC|avx,avx2,fma,sse4_1|4");
  // Tuning for another target, the AVX-512 machine is no nearer: the features decide.
  CHECK(seeds_from_similar_hardware(db, k, shape, sse, here, space, 1).at(0).hardware ==
        "AMD EPYC|avx,avx2,fma,sse4_1|4");
  CHECK(seeds_from_similar_hardware(db, k, "batch=3,d_model=64,t=16", avx2, here, space, 3).empty());
}

TEST_CASE("a machine without records is seeded, and the seed is measured here", "[tuner][seed]") {
  temp_dir work("seed");
  const toolchain t = real_tools(work.path);
  auto o = small_layernorm();
  o.initial_random = 0, o.max_trials = 2, o.confirm_rounds = 0, o.budget_s = 120;
  database db(work.path + "/db");
  const knob_set theirs = layernorm_knobs(16, 1);
  db.append(tuned_elsewhere("Some Other CPU|avx,avx2,fma,sse4_1|16", target_of_isa(o.isa), theirs, 0.01));
  const auto hw = this_machine();
  tune(t, real_catalog(), "layernorm", o, db, hw);
  bool measured_here = false;
  for (const auto& r : db.load())
    if (r.source == "seed") {
      CHECK(r.knobs == theirs);
      CHECK(r.hardware == hw.key());
      CHECK(r.verified());
      CHECK(r.median_ms != 0.01);
      measured_here = true;
    }
  CHECK(measured_here);
}

TEST_CASE("a preset's total budget follows each kernel's share of a model's run", "[tuner][budget]") {
  const auto jobs = preset("transformer-base");
  const auto budgets = budget_shares(jobs, 900);
  REQUIRE(budgets.size() == jobs.size());
  double total = 0;
  std::map<std::string, double> by_kernel;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    total += budgets[i];
    by_kernel[jobs[i].kernel] += budgets[i];
    CHECK(budgets[i] >= 0.25 * 900 / double(jobs.size()) - 1e-9); // the evenly spread quarter
  }
  CHECK(total == Approx(900));
  // The FFN and logits (two thirds of a decode step) outweigh LayerNorm and softmax.
  CHECK(by_kernel["ffn_relu"] > 8 * by_kernel["layernorm"]);
  CHECK(by_kernel["logits"] > 8 * by_kernel["softmax"]);
  // A kernel's shapes share its weight; int8 presets carry it on their one shape.
  const auto int8 = typed_shapes(jobs, "int8");
  const auto weight_of = [](const std::vector<preset_entry>& v, const std::string& k) {
    double w = 0;
    for (const auto& e : v)
      w += e.kernel == k ? e.weight : 0;
    return w;
  };
  CHECK(weight_of(int8, "logits_int8") == Approx(weight_of(jobs, "logits")));
  CHECK(weight_of(int8, "ffn_relu_int8") == Approx(weight_of(jobs, "ffn_relu")));
  // Without weights the budget is even.
  std::vector<preset_entry> flat(4, preset_entry{"layernorm", "d_model=8,t=1,batch=1", true, 0});
  for (const double b : budget_shares(flat, 100))
    CHECK(b == Approx(25));
}
