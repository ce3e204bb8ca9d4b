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
  CHECK(panel_tallest_tile(1, 4, avx2, panel_sums_kind::pairs) == 2);    // int16 pairs: 4 ymm a row
  CHECK(panel_tallest_tile(2, 8, avx512, panel_sums_kind::floats) == 8); // 16 + 2 + 1 of 32 zmm
  CHECK(panel_tallest_tile(2, 8, avx512, panel_sums_kind::pairs) == 4);  // 16 + 4 + 1
  CHECK(panel_tallest_tile(1, 2, sse41, panel_sums_kind::floats) == 2);  // 8 + 4 + 1 of 16 xmm
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
