// The tuner's database: which record a lookup takes (confirmation before speed,
// exact hardware), how a model's tuned shapes reach the knob file the build
// takes, what a search varies, and pruning. The knob sets exported per bucket
// and phase: export_knobs_test.cpp.
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

TEST_CASE("a confirmation record outranks a faster search record", "[tuner][database]") {
  record lucky, confirmed, other_shape;
  lucky.kernel = "softmax", lucky.shape = "batch=8,n=128,t=128", lucky.status = "ok", lucky.median_ms = 1.0;
  lucky.source = "mutation";
  confirmed = lucky, confirmed.source = "confirm", confirmed.median_ms = 1.3;
  record slower_confirmed = confirmed;
  slower_confirmed.median_ms = 1.5;
  record failed = confirmed;
  failed.status = "wrong", failed.median_ms = 0.1;
  const std::vector<record> rs{lucky, slower_confirmed, confirmed, failed};
  const record* pick = pick_tuned(rs, [](const record&) { return true; });
  REQUIRE(pick);
  CHECK(pick->confirmed());
  CHECK(pick->median_ms == 1.3);
  // Without confirmation records, the fastest verified search record.
  const std::vector<record> search{lucky, failed};
  CHECK(pick_tuned(search, [](const record&) { return true; })->median_ms == 1.0);
  CHECK(pick_tuned(search, [](const record& r) { return r.shape == "t=1"; }) == nullptr);
}

// The first shape of `kernel` in `bucket` among `shapes` ("": its primary shape).
std::string shape_in(const std::vector<preset_entry>& shapes, const std::string& kernel, const std::string& bucket) {
  const auto e = std::find_if(shapes.begin(), shapes.end(), [&](const preset_entry& e) {
    return e.kernel == kernel && (bucket.empty() ? e.primary : bucket_of(e.shape) == bucket);
  });
  REQUIRE(e != shapes.end());
  return e->shape;
}

// Whether the generator builds `kernel` with `knob_file` (its log shown if not).
bool generates(const toolchain& t, const std::string& dir, const std::string& kernel, const std::string& knob_file,
               const std::string& outputs) {
  const std::string name = "hf_" + kernel, log_file = dir + "/" + name + ".log";
  const int rc = std::system((t.generator + " -g kernel -o " + dir + " -e " + outputs + " -f " + name + " -n " + name +
                              " target=x86-64-linux-avx-avx2-f16c-fma-sse41-no_runtime kernel=" + kernel +
                              " knob_file=" + knob_file + " > " + log_file + " 2>&1")
                                 .c_str());
  std::ifstream log(log_file);
  UNSCOPED_INFO(std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>()));
  return rc == 0;
}

TEST_CASE("a model's tuned shapes reach the knob file the build takes", "[tuner][database]") {
  temp_dir work("model");
  database db(work.path);
  const auto hw = this_machine();
  const auto c = real_catalog();
  const auto shapes = model_shapes({64, 4, 256, 100, 120, "relu"}, 16, 4); // no preset has these
  record r;
  r.kernel = "layernorm", r.knob_section = "layernorm", r.target = target_of_isa("avx2"), r.status = "ok";
  r.hardware = hw.key(), r.schedule_revision = c.revisions.at("layernorm"),
  r.shape = shape_in(shapes, "layernorm", "decode");
  r.median_ms = 0.01, r.source = "confirm";
  r.knobs = default_knobs(real_tools(work.path), "layernorm", "avx2");
  r.knobs["rows_per_task"] = 2, r.knobs["vectors"] = 4;
  db.append(r);
  record other_chunk = r; // attention at a decode shape, measured with another kv_chunk than the section's
  other_chunk.kernel = "attention", other_chunk.knob_section = "attention";
  other_chunk.schedule_revision = c.revisions.at("attention");
  other_chunk.shape = shape_in(shapes, "attention", "decode1");
  other_chunk.knobs = {{"kv_chunk", 128}, {"q_tile", 1}};
  db.append(other_chunk);
  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  const std::string file = work.path + "/knobs.json";
  const auto report = export_knobs(defaults, db, hw, shapes, file, c.revisions, c.bucket_plans(), c.algorithm_knobs);
  CHECK(report.tuned.size() == 1);
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["_buckets"]["layernorm"]["decode"]["avx2"]["rows_per_task"] == 2);
  CHECK(j["_buckets"]["layernorm"]["decode"]["avx2"]["vectors"] == 4);
  CHECK(j["_source"]["hardware"] == hw.key());
  // One pipeline has one algorithm: a record with another kv_chunk is not adopted.
  CHECK(j["_buckets"]["attention"]["decode1"]["avx2"]["kv_chunk"] == j["attention"]["avx2"]["kv_chunk"]);

  // A later tune (this file its base) measures another kv_chunk in every bucket
  // that has records (prefill and one-row decode), the section adopts it, and every
  // bucket set takes the section's algorithm, including those the base file holds
  // from the earlier algorithm.
  record prefill = other_chunk;
  prefill.shape = shape_in(shapes, "attention", "");
  prefill.knobs = default_knobs(real_tools(work.path), "attention", "avx2");
  const int chunk = prefill.knobs.at("kv_chunk") * 2;
  prefill.knobs["kv_chunk"] = chunk;
  db.append(prefill);
  record one_row = prefill;
  one_row.shape = other_chunk.shape, one_row.median_ms = other_chunk.median_ms;
  db.append(one_row);
  const std::string later = work.path + "/knobs_later.json";
  export_knobs(file, db, hw, shapes, later, c.revisions, c.bucket_plans(), c.algorithm_knobs);
  const auto l = nlohmann::json::parse(std::ifstream(later));
  CHECK(l["attention"]["avx2"]["kv_chunk"] == chunk);
  for (const auto& [bucket, sets] : l["_buckets"]["attention"].items()) {
    INFO(bucket);
    CHECK(sets["avx2"]["kv_chunk"] == chunk);
  }
  // The generator builds the file's knob sets: the decode branch with the tuned values.
  const toolchain t = real_tools(work.path);
  CHECK(generates(t, work.path, "out_projection", file, "static_library,h"));
  CHECK(fs::exists(work.path + "/hf_out_projection.a"));
  // ... and the attention kernel of the later file, whose buckets must agree.
  CHECK(generates(t, work.path, "attention", later, "h"));
}

TEST_CASE("database lookups are exact on hardware; a miss keeps the defaults", "[tuner][database]") {
  temp_dir work("db");
  database db(work.path);
  record r;
  r.kernel = "layernorm", r.knob_section = "layernorm", r.shape = "batch=8,d_model=512,t=128";
  r.target = target_of_isa("avx512"), r.status = "ok", r.median_ms = 1.0;
  r.knobs = {{"rows_per_task", 32}, {"vectorize_reductions", 0}, {"vectors", 4}};
  r.hardware = "Some Other CPU|avx512f|64";
  db.append(r);
  const auto hw = this_machine();
  CHECK_FALSE(db.best(r.kernel, r.shape, r.target, hw.key()).has_value());
  CHECK(db.best(r.kernel, r.shape, r.target, r.hardware).has_value());

  const std::string defaults = std::string(HALFORMER_SOURCE) + "/schedules/knobs/x86-64.json";
  auto report = export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k1.json", {});
  CHECK(report.tuned.empty());
  CHECK(std::find(report.defaulted.begin(), report.defaulted.end(), "layernorm.avx512") != report.defaulted.end());

  r.hardware = hw.key(), r.median_ms = 2.0;
  db.append(r);
  report = export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k2.json", {});
  REQUIRE(report.tuned.size() == 1);
  CHECK_THAT(report.tuned[0], Catch::StartsWith("layernorm.avx512"));
  std::ifstream in(work.path + "/k2.json");
  const auto j = nlohmann::json::parse(in);
  CHECK(j["layernorm"]["avx512"]["rows_per_task"] == 32);
  CHECK(j["layernorm"]["avx2"]["rows_per_task"] == 8); // another ISA: no record, default kept

  // The revision is stored and read back (a record that lost it would count as revision 1).
  {
    record r2 = r;
    r2.schedule_revision = 7;
    CHECK(record::from_json(r2.to_json(), "test").schedule_revision == 7);
  }
  // A record measured with an older revision of the schedule is not used, and the
  // report names the section whose records that retired.
  CHECK(report.retired.empty());
  report = export_knobs(defaults, db, hw, preset("transformer-base"), work.path + "/k3.json", {{"layernorm", 2}});
  CHECK(report.tuned.empty());
  CHECK(report.retired == std::vector<std::string>{"layernorm (revision 1; now 2)"});

  std::ofstream(work.path + "/schedules.jsonl", std::ios::app) << "{not json\n";
  CHECK_THROWS_WITH(db.load(), Catch::Contains("schedules.jsonl line 3: invalid JSON"));
}

TEST_CASE("a search varies only the knobs its shape's calls run", "[tuner]") {
  const auto c = real_catalog();
  const kernel_info& k = c.kernel("ffn_relu");
  const auto names = [](const knob_space& s) {
    std::set<std::string> n;
    for (const auto& [name, values] : s)
      n.insert(name);
    return n;
  };
  const auto decode = names(space_at(c, k, "avx2", canonical_shape("d_model=512,d_ff=2048,t=1,batch=8")));
  const auto prefill = names(space_at(c, k, "avx2", canonical_shape("d_model=512,d_ff=2048,t=128,batch=8")));
  CHECK(decode.count("decode_tile_rows"));
  CHECK(decode.count("hidden_tile_prefetch"));
  CHECK_FALSE(decode.count("tile_rows"));
  CHECK_FALSE(decode.count("hidden_tiles_per_task"));
  CHECK(prefill.count("tile_rows"));
  CHECK(prefill.count("hidden_tiles_per_task"));
  CHECK_FALSE(prefill.count("decode_tile_panels"));
  CHECK_FALSE(prefill.count("tile_prefetch"));
  CHECK(decode.size() + prefill.size() == space_for(c, k, "avx2").size());
  CHECK(restricted_to({{"tile_rows", 4}, {"decode_tile_rows", 8}},
                      space_at(c, k, "avx2", canonical_shape("d_model=512,d_ff=2048,t=1,batch=8"))) ==
        knob_set{{"decode_tile_rows", 8}});
}

TEST_CASE("pruning drops exactly the records of earlier schedule revisions, keeping lines as written",
          "[tuner][database]") {
  temp_dir work("prune");
  database db(work.path);
  catalog cat;
  cat.revisions = {{"layernorm", 5}};
  cat.gpu_revisions = {{"layernorm", 9}};
  record r;
  r.kernel = r.knob_section = "layernorm", r.shape = "batch=8,d_model=512,t=128", r.status = "ok";
  const auto with = [&](const std::string& target, int revision) {
    record x = r;
    x.target = target, x.schedule_revision = revision;
    return x;
  };
  const record cpu_now = with(target_of_isa("avx2"), 5), cpu_old = with(target_of_isa("avx2"), 4),
               gpu_now = with(target_of_isa("opencl"), 9), gpu_at_cpu_revision = with(target_of_isa("opencl"), 5);
  record unlisted = cpu_now; // a section the catalog no longer has counts as revision 1
  unlisted.knob_section = "gone", unlisted.schedule_revision = 3;
  // A kept line stays as written, fields this version does not read included.
  auto annotated = cpu_now.to_json();
  annotated["a_later_field"] = "kept";
  {
    std::ofstream out(db.file());
    out << annotated.dump() << "\n\n"
        << cpu_old.to_json().dump() << "\n"
        << gpu_now.to_json().dump() << "\n"
        << gpu_at_cpu_revision.to_json().dump() << "\n"
        << unlisted.to_json().dump() << "\n";
  }
  CHECK(db.keep_only([&](const record& x) { return measured_with_current_schedule(cat, x); }) == 3);
  const auto lines = [&] {
    std::ifstream in(db.file());
    std::vector<std::string> all;
    for (std::string line; std::getline(in, line);)
      all.push_back(line);
    return all;
  };
  CHECK(lines() == std::vector<std::string>{annotated.dump(), gpu_now.to_json().dump()});

  // A malformed line stops the rewrite and leaves the database as it was.
  std::ofstream(db.file(), std::ios::app) << "{not json\n";
  CHECK_THROWS_WITH(db.keep_only([](const record&) { return false; }), Catch::Contains("line 3: invalid JSON"));
  CHECK(lines() == std::vector<std::string>{annotated.dump(), gpu_now.to_json().dump(), "{not json"});
  CHECK_FALSE(fs::exists(db.file() + ".new"));
}
