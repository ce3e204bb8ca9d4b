// The panel GEMMs' register tiles (schedules/cpu/panels.hpp): how tall a tile
// the registers allow, and which height a call's rows take. The kernels built
// with these branches are checked against the references by the kernels.* and
// kernels_bucketed.* tests; this checks the choice itself over every row count.
#include "halformer/schedules/cpu/panels.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace halformer::schedules::cpu;

namespace {
const Halide::Target avx2("x86-64-linux-avx-avx2-f16c-fma-sse41"),
    avx512("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41"), sse41("x86-64-linux-sse41");

// The height a branch ladder gives `rows` rows: the first (tallest) that suits.
int height_for(int rows, const std::vector<int>& heights) {
  for (int h : heights) {
    const Halide::Expr suits = Halide::Internal::simplify(tile_height_suits(rows, h));
    REQUIRE(Halide::Internal::is_const(suits));
    if (Halide::Internal::is_const_one(suits))
      return h;
  }
  return 0;
}
} // namespace

TEST_CASE("the tallest tile fits the registers: accumulators, weights and a broadcast", "[panels]") {
  CHECK(panel_tallest_tile(1, 6, avx2, panel_sums_kind::floats) == 6);   // 12 + 2 + 1 of 16 ymm
  CHECK(panel_tallest_tile(1, 12, avx2, panel_sums_kind::floats) == 6);  // 26 + 2 + 1 would spill: halved
  CHECK(panel_tallest_tile(2, 2, avx2, panel_sums_kind::floats) == 2);   // 8 + 4 + 1
  CHECK(panel_tallest_tile(1, 4, avx2, panel_sums_kind::pairs) == 4);    // pairs in passes of 4 lanes: 1 ymm a row
  CHECK(panel_tallest_tile(1, 16, avx2, panel_sums_kind::pairs) == 8);   // 16 + 1 + 1 would spill: halved
  CHECK(panel_tallest_tile(2, 8, avx512, panel_sums_kind::floats) == 8); // 16 + 2 + 1 of 32 zmm
  CHECK(panel_tallest_tile(2, 8, avx512, panel_sums_kind::pairs) == 8);  // passes of 8 lanes: 16 + 2 + 1
  CHECK(panel_tallest_tile(1, 2, sse41, panel_sums_kind::floats) == 2);  // 8 + 4 + 1 of 16 xmm
}

TEST_CASE("pairs tiles narrow their pass over the panel's lanes until the tile fits", "[panels]") {
  CHECK(panel_pass_lanes(1, 2, avx2, panel_sums_kind::pairs) == 16);   // 8 + 4 + 1 of 16 ymm: whole panels
  CHECK(panel_pass_lanes(1, 4, avx2, panel_sums_kind::pairs) == 8);    // 16 + 4 + 1 would spill: 8 + 2 + 1
  CHECK(panel_pass_lanes(1, 8, avx2, panel_sums_kind::pairs) == 4);    // 8 + 1 + 1: one ymm of sums a row
  CHECK(panel_pass_lanes(2, 8, avx512, panel_sums_kind::pairs) == 8);  // 16 + 2 + 1 of 32 zmm
  CHECK(panel_pass_lanes(2, 4, avx512, panel_sums_kind::pairs) == 16); // 16 + 4 + 1
  CHECK(panel_pass_lanes(1, 2, sse41, panel_sums_kind::pairs) == 8);   // 8 + 4 + 1 of 16 xmm
  CHECK(panel_pass_lanes(1, 6, avx2, panel_sums_kind::floats) == 16);  // floats and quads: always whole panels
  CHECK(panel_pass_lanes(2, 8, avx512, panel_sums_kind::quads) == 16);
  // Every tile the knobs allow fits at its pass (the accumulators never spill).
  for (int panels : {1, 2, 4})
    for (int rows : {1, 2, 3, 4, 6, 8, 12}) {
      const int tall = panel_tallest_tile(panels, rows, avx2, panel_sums_kind::pairs);
      const int lanes = panel_pass_lanes(panels, tall, avx2, panel_sums_kind::pairs);
      INFO(panels << " x " << rows << " -> " << tall << " rows, " << lanes << " lanes");
      CHECK((tall + 1) * panels * (2 * lanes / 8) + 1 <= 16);
    }
}

TEST_CASE("the ladder: the tallest height, then every one of 8, 6, 4, 3, 2, 1 below it", "[panels]") {
  CHECK(panel_tile_heights(6) == std::vector<int>{6, 4, 3, 2, 1});
  CHECK(panel_tile_heights(12) == std::vector<int>{12, 8, 6, 4, 3, 2, 1});
  CHECK(panel_tile_heights(1) == std::vector<int>{1});
}

TEST_CASE("rows take the tallest height that recomputes at most an eighth of them", "[panels]") {
  const auto heights = panel_tile_heights(6);
  CHECK(height_for(1, heights) == 1);
  CHECK(height_for(5, heights) == 3); // 3 + 3, one row twice
  CHECK(height_for(7, heights) == 4); // 4 + 4, one row twice
  CHECK(height_for(8, heights) == 4); // not 6 + 6, four rows twice
  CHECK(height_for(9, heights) == 3);
  CHECK(height_for(32, heights) == 6); // 36 rows computed: 4 of 32
  CHECK(height_for(128, heights) == 6);
  for (const auto& ladder : {panel_tile_heights(6), panel_tile_heights(12), panel_tile_heights(2)})
    for (int rows = 1; rows <= 300; ++rows) {
      const int h = height_for(rows, ladder);
      INFO("rows " << rows << ", height " << h);
      REQUIRE(h >= 1);
      REQUIRE(h <= rows);
      const int recomputed = (rows + h - 1) / h * h - rows;
      CHECK(recomputed * 8 <= std::max(rows, 8));
      for (int taller : ladder) // no taller height of the ladder would have suited
        if (taller > h && taller <= rows)
          CHECK(((rows + taller - 1) / taller * taller - rows) * 8 > std::max(rows, 8));
    }
}

TEST_CASE("a one-row decode tile takes the most panels of the group its registers allow", "[panels]") {
  CHECK(panel_widest_row_tile(1, avx2, panel_sums_kind::floats) == 4);   // 8 ymm accumulators + 1 broadcast
  CHECK(panel_widest_row_tile(2, avx512, panel_sums_kind::floats) == 4); // 4 zmm + 1
  CHECK(panel_widest_row_tile(2, avx512, panel_sums_kind::quads) == 4);  // vpdpbusd: weights from memory
  CHECK(panel_widest_row_tile(1, avx2, panel_sums_kind::pairs) == 1);    // 2 panels: 8 + 8 widened weights + 1 > 16
  CHECK(panel_widest_row_tile(2, avx512, panel_sums_kind::pairs) == 4);  // 8 + 8 + 1 of 32 zmm
  CHECK(panel_widest_row_tile(1, sse41, panel_sums_kind::floats) == 2);  // 4 panels: 16 xmm + 1 > 16
  CHECK(panel_widest_row_tile(4, avx2, panel_sums_kind::pairs) == 4);    // never fewer than the knobs' panels
}
