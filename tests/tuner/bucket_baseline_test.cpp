// A search's baseline at a shape is the knob set a build runs there: the shape
// bucket's hand set over the section's values (common/bucket_knobs.hpp), not the
// section alone; a tune that compared against the section's values could adopt a
// set slower than the hand bucket's and silently undo it.
#include "database.hpp"
#include "export_knobs.hpp"
#include "support.hpp"
#include "tuner.hpp"

#include "halformer/bucket_knobs.hpp"

#include <catch2/catch.hpp>

#include <fstream>

using namespace halformer::tuner;
using namespace halformer::tuner::testing;

namespace {
// The hand knob file with a layernorm set for one-row decode on sse41 and one for
// prefill on every ISA, written beside `work`.
std::string knob_file_with_buckets(const std::string& work) {
  std::ifstream in(std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json");
  auto j = nlohmann::json::parse(in);
  j["_buckets"]["layernorm"]["decode1"]["sse41"] = {{"rows_per_task", 1}, {"_why", "test"}};
  j["_buckets"]["layernorm"]["prefill"]["any"] = {{"vectors", 1}};
  const std::string file = work + "/knobs.json";
  std::ofstream(file) << j.dump(1);
  return file;
}
} // namespace

TEST_CASE("the hand knob set at a shape is its bucket's own set over the section's", "[tuner][buckets]") {
  temp_dir work("bucket_sets");
  toolchain t = real_tools(work.path);
  t.knob_file = knob_file_with_buckets(work.path);
  const auto c = real_catalog();
  const auto& k = c.kernel("layernorm");
  const auto section = default_knobs(t, "layernorm", "sse41");
  REQUIRE(section.at("rows_per_task") != 1);
  REQUIRE(section.at("vectors") != 1);

  const auto decode1 = hand_knobs_at(t, k, canonical_shape("d_model=64,t=1,batch=1"), "sse41");
  CHECK(decode1.at("rows_per_task") == 1);
  CHECK(decode1.at("vectors") == section.at("vectors")); // the rest from the section
  // decode has no set: the section's values, not a neighbouring bucket's.
  CHECK(hand_knobs_at(t, k, canonical_shape("d_model=64,t=1,batch=4"), "sse41") == section);
  // prefill's "any" set serves every ISA without its own.
  const auto prefill = hand_knobs_at(t, k, canonical_shape("d_model=64,t=16,batch=4"), "avx2");
  CHECK(prefill.at("vectors") == 1);
  CHECK(prefill.at("rows_per_task") == default_knobs(t, "layernorm", "avx2").at("rows_per_task"));
  // An ISA without its own decode1 set (and no "any") runs the section's values.
  CHECK(hand_knobs_at(t, k, canonical_shape("d_model=64,t=1,batch=1"), "avx2") ==
        default_knobs(t, "layernorm", "avx2"));
}

TEST_CASE("the committed hand buckets are what a search at their shapes starts from", "[tuner][buckets]") {
  temp_dir work("hand_buckets");
  const toolchain t = real_tools(work.path);
  const auto c = real_catalog();
  std::ifstream in(t.knob_file);
  const auto j = nlohmann::json::parse(in);
  // log_softmax at decode runs one row per task, not the section's rows.
  const int hand = j["_buckets"]["log_softmax"]["decode"]["any"]["rows_per_task"].get<int>();
  const int section = j["softmax"]["avx2"]["rows_per_task"].get<int>();
  REQUIRE(hand != section);
  const auto& k = c.kernel("log_softmax");
  CHECK(hand_knobs_at(t, k, canonical_shape("n=32000,t=1,batch=8"), "avx2").at("rows_per_task") == hand);
  CHECK(hand_knobs_at(t, k, canonical_shape("n=32000,t=1,batch=1"), "avx2").at("rows_per_task") == section);
  CHECK(hand_knobs_at(t, k, canonical_shape("n=32000,t=128,batch=8"), "avx2").at("rows_per_task") == section);
}

TEST_CASE("a search measures the bucket's hand set as its default", "[tuner][buckets]") {
  temp_dir work("bucket_search");
  toolchain t = real_tools(work.path);
  t.knob_file = knob_file_with_buckets(work.path);
  const auto c = real_catalog();
  auto o = small_layernorm();
  o.shape = canonical_shape("d_model=64,t=1,batch=1");
  o.max_trials = 1, o.budget_s = 120;
  database db(work.path + "/db");
  const auto r = tune(t, c, "layernorm", o, db, this_machine());
  INFO(r.defaults.detail);
  REQUIRE(r.trials == 1);
  CHECK(r.defaults.source == "default");
  CHECK(r.defaults.verified());
  CHECK(r.defaults.knobs == hand_knobs_at(t, c.kernel("layernorm"), o.shape, "sse41"));
  CHECK(r.defaults.knobs.at("rows_per_task") == 1);
}

TEST_CASE("the knob export starts each bucket from the set the build runs there", "[tuner][buckets]") {
  temp_dir work("bucket_export");
  const std::string base = knob_file_with_buckets(work.path);
  database db(work.path + "/db");
  const auto c = real_catalog();
  const std::string out = work.path + "/out.json";
  export_knobs(base, db, this_machine(), preset("transformer-base"), out, c.revisions, c.bucket_plans(),
               c.algorithm_knobs);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  const auto& sets = j["_buckets"]["layernorm"];
  // No records: every bucket keeps what the base file runs there.
  CHECK(sets["prefill"]["avx2"]["vectors"] == 1); // its "any" set
  CHECK(sets["prefill"]["sse41"]["rows_per_task"] == j["layernorm"]["sse41"]["rows_per_task"]);
  CHECK(sets["decode"]["sse41"]["vectors"] == j["layernorm"]["sse41"]["vectors"]); // no set: the section's
  CHECK(sets["decode"]["avx512"]["vectors"] == j["layernorm"]["avx512"]["vectors"]);
}
