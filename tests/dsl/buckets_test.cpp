// Shape buckets as specialize() branches (schedules/buckets.hpp): which knob set
// serves which bucket, and how a knob file's bucket sets are read. The kernels
// built with a set per bucket are checked against the references by the
// kernels_bucketed.* tests.
#include "halformer/schedules/buckets.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace halformer::schedules;

namespace {
const std::vector<knob_decl> decls{{"rows", {1, 2, 4, 8}, "rows per task"},
                                   {"chunk", {16, 32}, "keys per chunk", /*algorithm=*/true}};
knob_values set(int rows, int chunk = 16) { return knob_values("k", decls, {{"rows", rows}, {"chunk", chunk}}); }
std::vector<std::string> served(const bucket_branch& b) { return b.buckets; }
const Halide::Expr t = Halide::Internal::Variable::make(Halide::Int(32), "t"),
                   batch = Halide::Internal::Variable::make(Halide::Int(32), "batch");
} // namespace

TEST_CASE("each distinct bucket knob set is one branch; the decode one is general", "[buckets]") {
  SECTION("no bucket sets: one general branch with the section's values") {
    const auto b = plan_branches("k", decls, {}, set(8), t, batch);
    REQUIRE(b.size() == 1);
    CHECK(!b[0].condition.defined());
    CHECK(b[0].knobs["rows"] == 8);
  }
  SECTION("four different sets: four branches, decode last and unconditioned") {
    const auto b = plan_branches(
        "k", decls, {{"prefill", set(1)}, {"decode", set(2)}, {"decode1", set(4)}, {"decode_wide", set(8)}}, set(1), t,
        batch);
    REQUIRE(b.size() == 4);
    CHECK(served(b[0]) == std::vector<std::string>{"prefill"});
    CHECK(served(b[1]) == std::vector<std::string>{"decode1"});
    CHECK(served(b[2]) == std::vector<std::string>{"decode_wide"});
    CHECK(served(b[3]) == std::vector<std::string>{"decode"});
    CHECK(b[0].condition.defined());
    CHECK(b[1].condition.defined());
    CHECK(b[2].condition.defined());
    CHECK(!b[3].condition.defined());
    CHECK(b[0].knobs["rows"] == 1);
    CHECK(b[1].knobs["rows"] == 4);
    CHECK(b[2].knobs["rows"] == 8);
  }
  SECTION("a bucket without a set runs the section's values; a set equal to decode's shares its branch") {
    const auto b = plan_branches("k", decls, {{"prefill", set(1)}, {"decode", set(2)}}, set(8), t, batch);
    REQUIRE(b.size() == 4);
    CHECK(served(b[0]) == std::vector<std::string>{"prefill"});
    CHECK(served(b[1]) == std::vector<std::string>{"decode1"});
    CHECK(b[1].knobs["rows"] == 8); // the section's, not a neighbouring bucket's
    CHECK(served(b[2]) == std::vector<std::string>{"decode_wide"});
    CHECK(b[2].knobs["rows"] == 8); // the section's, not the streaming decode step's
    CHECK(served(b[3]) == std::vector<std::string>{"decode"});
    const auto shared = plan_branches("k", decls, {{"decode1", set(8)}, {"decode", set(2)}}, set(2), t, batch);
    REQUIRE(shared.size() == 2);
    CHECK(served(shared[1]) == std::vector<std::string>{"decode", "prefill", "decode_wide"});
    // Equal sets of prefill and decode1 stay two branches, each on its plain condition.
    const auto two = plan_branches(
        "k", decls, {{"prefill", set(2)}, {"decode", set(4)}, {"decode1", set(2)}, {"decode_wide", set(4)}}, set(8), t,
        batch);
    REQUIRE(two.size() == 3);
    CHECK(two[0].knobs["rows"] == 2);
    CHECK(two[1].knobs["rows"] == 2);
    CHECK(served(two[2]) == std::vector<std::string>{"decode", "decode_wide"});
  }
  SECTION("a set for decode alone: the other buckets run the section's values") {
    const auto b = plan_branches("k", decls, {{"decode", set(1)}}, set(8), t, batch);
    REQUIRE(b.size() == 4);
    CHECK(b[0].knobs["rows"] == 8);
    CHECK(b[1].knobs["rows"] == 8);
    CHECK(b[2].knobs["rows"] == 8);
    CHECK(b[3].knobs["rows"] == 1);
  }
  SECTION("algorithm knobs must agree: one pipeline has one algorithm") {
    CHECK_THROWS_WITH(
        plan_branches("attention", decls, {{"prefill", set(1, 16)}, {"decode", set(2, 32)}}, set(8), t, batch),
        Catch::Contains("attention: algorithm knob 'chunk' differs between bucket prefill (16) and "
                        "bucket decode (32)"));
  }
}

TEST_CASE("bucket conditions split (t, batch) into prefill, decode, decode1 and decode_wide", "[buckets]") {
  CHECK(bucket_of(128, 8) == "prefill");
  CHECK(bucket_of(2, 1) == "prefill");
  CHECK(bucket_of(1, 8) == "decode");
  CHECK(bucket_of(1, 1) == "decode1");
  CHECK(bucket_of(1, wide_decode_batch - 1) == "decode");
  CHECK(bucket_of(1, wide_decode_batch) == "decode_wide");
  CHECK(bucket_of(2, 128) == "prefill");
  CHECK_THROWS_WITH(bucket_of(1, 0), Catch::Contains("no shape bucket holds t = 1, batch = 0"));
  CHECK_THROWS_WITH(bucket_condition("decode2", Halide::Expr(1), Halide::Expr(8)),
                    Catch::Contains("unknown shape bucket 'decode2'"));
  for (const auto& [tv, bv] :
       std::vector<std::pair<int, int>>{{128, 8}, {2, 1}, {1, 8}, {1, 1}, {1, 2}, {1, 63}, {1, 64}, {1, 128}, {3, 64}})
    for (const auto& name : bucket_names()) {
      const Halide::Expr c = Halide::Internal::simplify(bucket_condition(name, Halide::Expr(tv), Halide::Expr(bv)));
      CHECK(Halide::Internal::is_const_one(c) == (name == bucket_of(tv, bv)));
    }
}

TEST_CASE("a knob file's bucket sets: per ISA, or 'any', over the section's values", "[buckets]") {
  const std::string path = "bucket_knobs_test.json";
  std::ofstream(path) << R"({"sec": {"avx2": {"rows": 8, "chunk": 16}, "sse41": {"rows": 8, "chunk": 16}},
    "_buckets": {"k": {"decode": {"any": {"rows": 2}, "sse41": {"rows": 4}}, "_comment": "ignored"}}})";
  const Halide::Target avx2("x86-64-linux-avx-avx2-f16c-fma-sse41"), sse41("x86-64-linux-sse41");
  const auto a = load_kernel_knobs("k", "sec", decls, avx2, path, "");
  CHECK(a.general["rows"] == 8);
  REQUIRE(a.by_bucket.count("decode"));
  CHECK(a.by_bucket.at("decode")["rows"] == 2);
  CHECK(a.by_bucket.at("decode")["chunk"] == 16); // from the section
  CHECK(load_kernel_knobs("k", "sec", decls, sse41, path, "").by_bucket.at("decode")["rows"] == 4);
  // A tuner candidate's overrides are one knob set for every shape.
  CHECK(load_kernel_knobs("k", "sec", decls, avx2, path, "rows:1").by_bucket.empty());
  std::ofstream(path) << R"({"sec": {"avx2": {"rows": 8, "chunk": 16}}, "_buckets": {"k": {"decode2": {}}}})";
  CHECK_THROWS_WITH(load_kernel_knobs("k", "sec", decls, avx2, path, ""),
                    Catch::Contains("_buckets.k.decode2 is not a shape bucket"));
  std::remove(path.c_str());
}

TEST_CASE("knob values may name the machine: cores, l2_kib/N", "[knobs]") {
  using nlohmann::json;
  const int cores = int(std::clamp(std::thread::hardware_concurrency(), 1u, 64u));
  CHECK(halformer::knob_value(json("cores"), "w") == cores);
  CHECK(halformer::knob_value(json(7), "w") == 7);
  const int eighth = halformer::knob_value(json("l2_kib/8"), "w");
  CHECK((eighth & (eighth - 1)) == 0); // a power of two
  CHECK(eighth <= std::max(1, halformer::machine::l2_kib() / 8));
  CHECK(eighth * 2 > halformer::machine::l2_kib() / 8);
  CHECK_THROWS_WITH(halformer::knob_value(json("l2_kib/0"), "f: s.k"),
                    Catch::Contains("f: s.k") && Catch::Contains("divisor"));
  CHECK_THROWS_WITH(halformer::knob_value(json("many"), "f: s.k"), Catch::Contains("f: s.k is not an integer"));
  CHECK_THROWS_WITH(halformer::knob_value(json(1.5), "f: s.k"), Catch::Contains("not an integer"));
}
