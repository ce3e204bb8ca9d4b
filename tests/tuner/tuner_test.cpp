// The tuner's guarantees: a wrong candidate is recorded as such and never timed
// or chosen; a crashing or hanging candidate is isolated in its child process and
// recorded; a real candidate is verified and measured (database_test.cpp: which
// record a lookup takes, and the knob files).
#include "database.hpp"
#include "export_knobs.hpp"
#include "support.hpp"
#include "tuner.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace fs = std::filesystem;
using namespace halformer::tuner;
using namespace halformer::tuner::testing;

TEST_CASE("wrong, crashing, hanging and uncompilable candidates are recorded, not chosen", "[tuner]") {
  temp_dir work("fake");
  toolchain t = real_tools(work.path);
  t.generator = FAKE_GENERATOR;
  const auto c = real_catalog();
  const auto& k = c.kernel("layernorm");
  auto o = small_layernorm();
  o.candidate_timeout_s = 3;
  const auto hw = this_machine();
  CHECK(measure(t, k, with_rows_per_task(1), o, hw, "test").status == "wrong");
  const auto crash = measure(t, k, with_rows_per_task(2), o, hw, "test");
  CHECK(crash.status == "crash");
  CHECK_THAT(crash.detail, Catch::Contains("signal"));
  CHECK(measure(t, k, with_rows_per_task(4), o, hw, "test").status == "timeout");
  CHECK(measure(t, k, with_rows_per_task(16), o, hw, "test").status == "compile_error");

  // A whole search over such candidates survives them all and picks none.
  database db(work.path + "/db");
  o.budget_s = 30, o.max_trials = 8, o.candidate_timeout_s = 2;
  const auto r = tune(t, c, "layernorm", o, db, hw);
  CHECK(r.trials == 8);
  CHECK(r.failed == 8);
  CHECK(r.best.status.empty());
  const auto records = db.load();
  REQUIRE(records.size() == 8);
  for (const auto& rec : records)
    CHECK_FALSE(rec.verified());
}

TEST_CASE("a real candidate is verified, then measured; tuning resumes from the database", "[tuner]") {
  temp_dir work("real");
  const toolchain t = real_tools(work.path);
  const auto c = real_catalog();
  auto o = small_layernorm();
  const auto hw = this_machine();
  const auto r = measure(t, c.kernel("layernorm"), with_rows_per_task(8), o, hw, "test");
  INFO(r.detail);
  REQUIRE(r.status == "ok");
  CHECK(r.max_error <= 1e-4);
  CHECK(r.median_ms > 0);
  CHECK(r.min_ms <= r.median_ms);
  CHECK(r.median_ms <= r.max_ms);

  database db(work.path + "/db");
  o.max_trials = 2, o.budget_s = 120;
  const auto first = tune(t, c, "layernorm", o, db, hw);
  CHECK(first.trials == 2);
  const auto second = tune(t, c, "layernorm", o, db, hw); // resumes: 2 new candidates
  CHECK(second.trials == 2);
  std::set<knob_set> distinct;
  for (const auto& rec : db.load())
    distinct.insert(rec.knobs);
  CHECK(distinct.size() == 4);
  CHECK(first.defaults.verified()); // the hand defaults are always measured first

  // Each search ends with a confirmation round: its finalists and the default,
  // re-measured side by side (3 runs each); the result is the confirmed winner.
  CHECK(first.best.confirmed());
  CHECK(first.best.settings.value("runs", 0) == o.confirm_rounds);
  int confirmations = 0;
  bool default_confirmed = false;
  for (const auto& rec : db.load())
    if (rec.confirmed()) {
      ++confirmations;
      default_confirmed |= rec.knobs == default_knobs(t, "layernorm", "sse41");
      CHECK(rec.verified());
    }
  CHECK(confirmations >= 2);
  CHECK(default_confirmed);
}

TEST_CASE("a confirmation round keeps the default unless clearly beaten", "[tuner]") {
  const knob_set defaults{{"rows_per_task", 8}};
  record def, close, clear, broken;
  def.status = close.status = clear.status = "ok", broken.status = "wrong";
  def.knobs = defaults, def.median_ms = 1.0;
  close.knobs = {{"rows_per_task", 16}}, close.median_ms = 0.98; // 2% faster: noise
  clear.knobs = {{"rows_per_task", 32}}, clear.median_ms = 0.90; // 10% faster
  broken.knobs = {{"rows_per_task", 64}}, broken.median_ms = 0.1;
  CHECK(choose_confirmed({def, close, broken}, defaults, 0.03)->knobs == defaults);
  CHECK(choose_confirmed({def, close, clear}, defaults, 0.03)->knobs == clear.knobs);
  CHECK(choose_confirmed({def, close}, defaults, 0.0)->knobs == close.knobs);
  CHECK(choose_confirmed({close, clear}, defaults, 0.03)->knobs == clear.knobs); // default not confirmed
  CHECK(choose_confirmed({broken}, defaults, 0.03) == nullptr);
  // On a noisy host the default's own runs set the margin: 10% faster is not
  // clearly faster when the default's runs spread by 15%.
  record noisy_def = def;
  noisy_def.settings["run_spread"] = 0.15;
  CHECK(adopt_margin(noisy_def, 0.03) == 0.15);
  CHECK(choose_confirmed({noisy_def, clear}, defaults, 0.03)->knobs == defaults);
  noisy_def.settings["run_spread"] = 0.05;
  CHECK(choose_confirmed({noisy_def, clear}, defaults, 0.03)->knobs == clear.knobs);
  CHECK(pool({def, clear, def}).settings["run_spread"].get<double>() == Approx(0.1));

  // The database trusts the latest round's choice over faster confirmation records.
  record older = close, newer = def, other = clear;
  for (record* r : {&older, &newer, &other})
    r->source = "confirm", r->settings = nlohmann::json::object();
  older.settings["chosen"] = true, older.when = "2026-11-22T07:00:00Z";
  newer.settings["chosen"] = true, newer.when = "2026-11-22T08:00:00Z";
  other.settings["chosen"] = false;
  const std::vector<record> rs{older, other, newer};
  CHECK(pick_tuned(rs, [](const record&) { return true; })->knobs == defaults);
}

TEST_CASE("shape buckets: prefill, decode, one-row decode, wide decode", "[tuner]") {
  CHECK(bucket_of("t=128,batch=8,d_model=512") == "prefill");
  CHECK(bucket_of("t=2,batch=1") == "prefill");
  CHECK(bucket_of("t=1,batch=8") == "decode");
  CHECK(bucket_of("t=1,batch=1,vocab=32000") == "decode1");
  CHECK(bucket_of("t=1,batch=128,d_model=512") == "decode_wide");
}

TEST_CASE("the transformer-base preset is the model shapes of Transformer-base", "[tuner]") {
  // The (kernel, shape) pairs of the model, primary shapes first; the GEMMs also at
  // 128 rows (decode_wide: beam 4 over 32 sentences).
  const std::vector<std::pair<std::string, std::string>> expected{
      {"embedding", "d_model=512,vocab=32000,t=128,batch=8"},
      {"embedding", "d_model=512,vocab=32000,t=1,batch=8"},
      {"qkv_projection", "d_k=64,heads=8,t=128,batch=8"},
      {"qkv_projection", "d_k=64,heads=8,t=1,batch=8"},
      {"qkv_projection", "d_k=64,heads=8,t=1,batch=1"},
      {"qkv_projection", "d_k=64,heads=8,t=1,batch=128"},
      {"kv_projection", "d_k=64,heads=8,t=128,batch=8"},
      {"q_projection", "d_k=64,heads=8,t=1,batch=8"},
      {"q_projection", "d_k=64,heads=8,t=1,batch=1"},
      {"q_projection", "d_k=64,heads=8,t=1,batch=128"},
      {"attention", "d_k=64,heads=8,t=128,tk=128,batch=8,causal=0"},
      {"attention", "d_k=64,heads=8,t=1,tk=128,batch=8,causal=1"},
      {"attention", "d_k=64,heads=8,t=1,tk=128,batch=1,causal=1"},
      {"out_projection", "d_k=64,heads=8,t=128,batch=8"},
      {"out_projection", "d_k=64,heads=8,t=1,batch=8"},
      {"out_projection", "d_k=64,heads=8,t=1,batch=1"},
      {"out_projection", "d_k=64,heads=8,t=1,batch=128"},
      {"ffn_relu", "d_model=512,d_ff=2048,t=128,batch=8"},
      {"ffn_relu", "d_model=512,d_ff=2048,t=1,batch=8"},
      {"ffn_relu", "d_model=512,d_ff=2048,t=1,batch=1"},
      {"ffn_relu", "d_model=512,d_ff=2048,t=1,batch=128"},
      {"layernorm", "d_model=512,t=128,batch=8"},
      {"layernorm", "d_model=512,t=1,batch=8"},
      {"add_layernorm", "d_model=512,t=128,batch=8"},
      {"softmax", "n=128,t=128,batch=8"},
      {"beam_candidates", "vocab=32000,t=1,batch=8"},
      {"logits", "d_model=512,vocab=32000,t=1,batch=8"},
      {"logits", "d_model=512,vocab=32000,t=1,batch=1"},
      {"logits", "d_model=512,vocab=32000,t=1,batch=128"}};
  const auto p = preset("transformer-base");
  REQUIRE(p.size() == expected.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].kernel == expected[i].first);
    CHECK(p[i].shape == canonical_shape(expected[i].second));
    CHECK(p[i].primary == (i == 0 || p[i - 1].kernel != p[i].kernel));
  }
  const auto gelu = model_shapes({256, 4, 1024, 500, 700, "gelu"}, 16, 4);
  CHECK(std::count_if(gelu.begin(), gelu.end(), [](const preset_entry& e) { return e.kernel == "ffn_gelu"; }) == 4);
  CHECK(gelu[1].shape == canonical_shape("d_model=256,vocab=700,t=1,batch=4")); // the decoder's embedding
  CHECK_THROWS_WITH(model_shapes({250, 4, 1024, 500, 700, "relu"}, 16, 4),
                    Catch::Contains("not a multiple of 4 heads"));
}

TEST_CASE("GPU schedules are tuned on the OpenCL device and keyed by it", "[tuner][opencl]") {
  temp_dir work("opencl");
  const toolchain t = real_tools(work.path);
  const auto c = real_catalog();
  auto o = small_layernorm();
  o.isa = "opencl";
  const auto hw = this_machine();
  const kernel_info k = kernel_for(c, "layernorm", "opencl");
  CHECK(k.revision == c.gpu_revisions.at("layernorm"));
  REQUIRE(space_for(c, k, "opencl").size() == c.gpu_spaces.at("layernorm").size());
  const auto r = measure(t, k, default_knobs(t, "layernorm", "opencl"), o, hw, "test");
  INFO(r.status << ": " << r.detail);
  REQUIRE(r.status == "ok"); // verified against the float64 reference, then timed
  CHECK(r.target == "x86-64-linux-sse41-opencl");
  CHECK_THAT(r.hardware, Catch::StartsWith(hw.key() + "|opencl:"));
  CHECK(r.hardware.size() > hw.key().size() + 8); // names the device

  database db(work.path + "/db");
  o.max_trials = 2, o.budget_s = 120;
  const auto result = tune(t, c, "layernorm", o, db, hw);
  CHECK(result.trials == 2);
  CHECK(result.defaults.verified());
  for (const auto& rec : db.load()) {
    CHECK(rec.target == "x86-64-linux-sse41-opencl");
    CHECK(rec.knobs.count("threads") == 1); // the GPU schedule's knobs, not the CPU's
    CHECK(rec.schedule_revision == k.revision);
  }
  CHECK_THROWS_WITH(target_of_isa("cuda"), Catch::Contains("needs a CUDA device"));
}

TEST_CASE("autoscheduler records compete in the search but are never built in", "[tuner][autoscheduler]") {
  // Why: an autoscheduled schedule is sized by its estimates and fails at smaller
  // shapes. Adams2019's LayerNorm for d_model 512 reads out of bounds at d_model 10:
  temp_dir work("auto");
  const toolchain t = real_tools(work.path);
  auto o = small_layernorm(); // SSE4.1: runs on any x86-64 CI machine
  o.shape = canonical_shape("d_model=10,t=3,batch=1");
  const auto hw = this_machine();
  const knob_set adams{{"_autoscheduler:Adams2019", 1}};
  CHECK(autoscheduler_of(adams) == "Adams2019");
  CHECK(measure(t, real_catalog().kernel("layernorm"), adams, o, hw, "autoscheduler:Adams2019").verified());
  // ... measured at its own estimates it is fine; the database may record it winning:
  database db(work.path + "/db");
  record r;
  r.kernel = "layernorm", r.knob_section = "layernorm", r.shape = canonical_shape("d_model=512,t=128,batch=8");
  r.target = target_of_isa("avx512"), r.hardware = hw.key(), r.status = "ok", r.median_ms = 0.001;
  r.knobs = adams, r.source = "autoscheduler:Adams2019";
  db.append(r);
  r.median_ms = 0.5, r.knobs = with_rows_per_task(16), r.source = "mutation";
  db.append(r);
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k.json", {});
  std::ifstream in(work.path + "/k.json");
  const auto j = nlohmann::json::parse(in);
  // ... but the build takes the best knob set, which runs at every shape.
  CHECK(j["layernorm"]["avx512"]["rows_per_task"] == 16);
  CHECK_FALSE(j["layernorm"]["avx512"].contains("_autoscheduler"));
}
