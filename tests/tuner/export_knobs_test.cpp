// The knob files the tuner exports from its database: each shape bucket's knob
// set takes the record at its bucket's preset shape, an algorithm knob is chosen
// by its time in every bucket, and each knob comes from a record of the phase it
// changes.
#include "database.hpp"
#include "export_knobs.hpp"
#include "support.hpp"
#include "tuner.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace halformer::tuner;
using namespace halformer::tuner::testing;

TEST_CASE("each kernel's bucket knob set takes the record at its bucket's preset shape", "[tuner][database]") {
  temp_dir work("variants");
  database db(work.path);
  const auto hw = this_machine();
  const auto c = real_catalog();
  const auto plans = c.bucket_plans();
  REQUIRE(plans.count("layernorm"));
  CHECK(plans.at("layernorm").buckets == std::vector<std::string>{"prefill", "decode"});
  record r;
  r.kernel = "layernorm", r.knob_section = "layernorm", r.target = target_of_isa("avx512");
  r.status = "ok", r.hardware = hw.key(), r.schedule_revision = c.revisions.at("layernorm");
  r.shape = canonical_shape("d_model=512,t=1,batch=8"), r.median_ms = 0.3, r.source = "confirm";
  r.knobs = {{"rows_per_task", 32}, {"vectors", 4}, {"vectorize_reductions", 0}};
  db.append(r);
  record add = r; // another kernel of the same section: only its own buckets take it
  add.kernel = "add_layernorm", add.shape = canonical_shape("d_model=512,t=128,batch=8"),
  add.knobs["rows_per_task"] = 2;
  db.append(add);
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  const auto report =
      export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k.json", c.revisions, plans);
  CHECK(report.unplanned.empty()); // the build declares a knob set for every preset shape's bucket
  std::ifstream in(work.path + "/k.json");
  const auto j = nlohmann::json::parse(in);
  const auto& v = j["_buckets"];
  CHECK(v["layernorm"]["decode"]["avx512"]["rows_per_task"] == 32);
  CHECK(v["layernorm"]["decode"]["avx512"]["vectors"] == 4);
  CHECK(v["add_layernorm"]["prefill"]["avx512"]["rows_per_task"] == 2);
  // No record: the section's values (here the hand defaults).
  CHECK(v["layernorm"]["prefill"]["avx512"]["rows_per_task"] == j["layernorm"]["avx512"]["rows_per_task"]);
  CHECK(v["layernorm"]["decode"]["avx2"]["rows_per_task"] == j["layernorm"]["avx2"]["rows_per_task"]);
  CHECK_THAT(v["layernorm"]["decode"]["avx512"]["_why"].get<std::string>(), Catch::Contains("(confirmed)"));
}

TEST_CASE("an algorithm knob is chosen by its time in every bucket, not at prefill alone", "[tuner][database]") {
  // As on a Zen 3: a larger kv_chunk won at prefill and was never measured at one
  // row, where it is slower; taken from prefill alone, batch 1 would run it.
  temp_dir work("algorithm");
  database db(work.path);
  const auto hw = this_machine();
  const auto c = real_catalog();
  const auto shapes = preset("transformer-base");
  const auto shape_of = [&](const std::string& bucket) {
    return std::find_if(shapes.begin(), shapes.end(),
                        [&](const preset_entry& e) { return e.kernel == "attention" && bucket_of(e.shape) == bucket; })
        ->shape;
  };
  const auto hand = default_knobs(real_tools(work.path), "attention", "avx2");
  const int chunk = hand.at("kv_chunk") * 2;
  const auto add = [&](const std::string& bucket, int kv_chunk, double ms) {
    record r;
    r.kernel = "attention", r.knob_section = "attention", r.target = target_of_isa("avx2"), r.status = "ok";
    r.hardware = hw.key(), r.schedule_revision = c.revisions.at("attention"), r.shape = shape_of(bucket);
    r.median_ms = ms, r.source = "random", r.knobs = hand, r.knobs["kv_chunk"] = kv_chunk;
    db.append(r);
  };
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  const auto exported_chunks = [&](const std::string& name) {
    const std::string file = work.path + "/" + name;
    const auto report = export_knobs(defaults, db, hw, shapes, file, c.revisions, c.bucket_plans(), c.algorithm_knobs);
    std::ifstream in(file);
    const auto j = nlohmann::json::parse(in);
    std::set<int> chunks{j["attention"]["avx2"]["kv_chunk"].get<int>()};
    for (const auto& [bucket, sets] : j["_buckets"]["attention"].items())
      chunks.insert(sets["avx2"]["kv_chunk"].get<int>());
    return std::make_pair(chunks, report.algorithms);
  };
  add("prefill", hand.at("kv_chunk"), 9.3), add("prefill", chunk, 6.5);
  add("decode1", hand.at("kv_chunk"), 0.025);
  CHECK(exported_chunks("a.json").first == std::set<int>{hand.at("kv_chunk")}); // unmeasured at one row
  add("decode1", chunk, 0.045); // measured there now: 6.5/6.5 + 0.045/0.025 > 9.3/6.5 + 1
  const auto [chunks, algorithms] = exported_chunks("b.json");
  CHECK(chunks == std::set<int>{hand.at("kv_chunk")});
  REQUIRE(algorithms.size() == 1);
  CHECK_THAT(algorithms[0], Catch::StartsWith("attention.avx2: ") &&
                                Catch::Contains("kv_chunk=" + std::to_string(hand.at("kv_chunk"))));
  add("decode", chunk, 0.2), add("decode", hand.at("kv_chunk"), 0.2);
  add("decode1", chunk, 0.026); // faster than before at one row: now the cheaper in all three
  CHECK(exported_chunks("c.json").first == std::set<int>{chunk});
}

TEST_CASE("each knob comes from a record of the phase it changes: decode steps' from the decode record",
          "[tuner][database]") {
  temp_dir work("branch");
  database db(work.path);
  const auto hw = this_machine();
  const auto c = real_catalog();
  CHECK(phase_of(c.knob_phases, "ffn", "hidden_decode_tile_rows") == halformer::knob_phase::decode);
  CHECK(phase_of(c.knob_phases, "ffn", "tile_rows") == halformer::knob_phase::prefill);
  CHECK(phase_of(c.knob_phases, "layernorm", "rows_per_task") == halformer::knob_phase::any);
  record prefill; // the FFN's primary shape is prefill: its decode-step knobs never ran there
  prefill.kernel = "ffn_relu", prefill.knob_section = "ffn", prefill.target = target_of_isa("avx512");
  prefill.shape = canonical_shape("d_model=512,d_ff=2048,t=128,batch=8"), prefill.status = "ok";
  prefill.hardware = hw.key(), prefill.median_ms = 3.0, prefill.schedule_revision = 2;
  // As an older search wrote them: every knob, also those its shape never ran.
  prefill.knobs = {{"tile_panels", 2},
                   {"tile_rows", 4},
                   {"tiles_per_task", 8},
                   {"tile_prefetch", 0},
                   {"decode_task_kib", 16},
                   {"decode_tile_rows", 3},
                   {"hidden_tile_rows", 6},
                   {"hidden_tile_prefetch", 0},
                   {"hidden_decode_task_kib", 16}};
  record decode1 = prefill; // one row, then several: the decode-step knobs come from the batch's record
  decode1.shape = canonical_shape("d_model=512,d_ff=2048,t=1,batch=1"), decode1.median_ms = 0.3;
  decode1.knobs = {{"decode_tile_panels", 1}, {"decode_tile_rows", 1},     {"tile_prefetch", 1},
                   {"decode_task_kib", 64},   {"hidden_tile_prefetch", 1}, {"hidden_decode_task_kib", 64}};
  record decode = decode1;
  decode.shape = canonical_shape("d_model=512,d_ff=2048,t=1,batch=8"), decode.median_ms = 0.5;
  decode.knobs["tile_prefetch"] = 4, decode.knobs["decode_task_kib"] = 512, decode.knobs["decode_tile_rows"] = 6,
  decode.knobs["decode_tile_panels"] = 4, decode.knobs["hidden_decode_task_kib"] = 256;
  decode.knobs["tile_rows"] = 12; // a prefill knob at a decode shape is not adopted from there
  for (const auto& r : {prefill, decode1, decode})
    db.append(r);
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  const auto report = export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k.json", {{"ffn", 2}},
                                   {}, {}, c.knob_phases);
  CHECK(report.tuned.size() == 2);
  std::ifstream in(work.path + "/k.json");
  const auto j = nlohmann::json::parse(in)["ffn"]["avx512"];
  CHECK(j["tile_rows"] == 4); // the primary (prefill) record
  CHECK(j["tile_panels"] == 2);
  CHECK(j["hidden_tile_rows"] == 6);
  CHECK(j["decode_tile_rows"] == 6); // the batch-8 decode record, not the prefill one's 3
  CHECK(j["decode_tile_panels"] == 4);
  CHECK(j["tile_prefetch"] == 4);
  CHECK(j["decode_task_kib"] == 512);
  CHECK(j["hidden_decode_task_kib"] == 256);
  CHECK(j["hidden_tile_prefetch"] == 1);
  CHECK_THAT(j["_why"].get<std::string>(), Catch::Contains("decode-step knobs: ffn_relu"));
}

// A bucket's knob set likewise takes from its record only the knobs that change
// its calls. Attention's decode_heads changes decode steps alone, also those in
// the prefill bucket (a source's beams: t > 1); the prefill record never ran it.
TEST_CASE("a bucket's record gives only the knobs that change its calls", "[tuner][database]") {
  temp_dir work("bucket_phase");
  database db(work.path);
  const auto hw = this_machine();
  const auto c = real_catalog();
  REQUIRE(phase_of(c.knob_phases, "attention", "decode_heads") == halformer::knob_phase::decode);
  record prefill;
  prefill.kernel = "attention", prefill.knob_section = "attention", prefill.target = target_of_isa("avx512");
  prefill.shape = canonical_shape("batch=8,causal=0,d_k=64,heads=8,t=128,tk=128"), prefill.status = "ok";
  prefill.hardware = hw.key(), prefill.median_ms = 1.3, prefill.schedule_revision = 2;
  prefill.knobs = {{"kv_chunk", 64}, {"q_tile", 2}, {"decode_lanes", 16}, {"decode_heads", 1}};
  record decode = prefill;
  decode.shape = canonical_shape("batch=8,causal=1,d_k=64,heads=8,t=1,tk=128"), decode.median_ms = 0.12;
  decode.knobs = {{"kv_chunk", 64}, {"q_tile", 8}, {"decode_lanes", 16}, {"decode_heads", 4}};
  for (const auto& r : {prefill, decode})
    db.append(r);
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k.json", {{"attention", 2}},
               c.bucket_plans(), {}, c.knob_phases);
  std::ifstream in(work.path + "/k.json");
  const auto j = nlohmann::json::parse(in);
  const auto& sets = j["_buckets"]["attention"];
  CHECK(sets["prefill"]["avx512"]["q_tile"] == 2);
  CHECK(sets["prefill"]["avx512"]["decode_heads"] == 4); // the section's, from the decode record: not 1
  CHECK(sets["decode"]["avx512"]["decode_heads"] == 4);
  CHECK(sets["decode"]["avx512"]["q_tile"] == 8); // q_tile changes every call
  CHECK(j["attention"]["avx512"]["decode_heads"] == 4);
}
