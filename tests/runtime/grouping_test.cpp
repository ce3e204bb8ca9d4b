// Beams share their source's cross-attention keys and values: after expand(k) a
// source's k decoder rows are k query positions of one attention over that
// source, so nothing per source is copied. Checked against decoding the same rows
// with every source encoded k times over.
#include "loaded_model.hpp"

#include "executor.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace halformer;

using fixtures::loaded_model;

namespace {

constexpr int sources = 3, k = 4, src_len = 6;
const int lengths[sources] = {6, 2, 4}; // padding differs per source

// Encodes the sources, each `copies` times in a row (source s -> rows s * copies ..).
void encode(executor& ex, const model_config& c, int copies) {
  ibuffer ids(src_len, sources * copies), len(sources * copies);
  for (int s = 0; s < sources; ++s)
    for (int j = 0; j < copies; ++j) {
      for (int t = 0; t < src_len; ++t)
        ids(t, s * copies + j) = 3 + (5 * t + 11 * s) % (c.src_vocab - 3);
      len(s * copies + j) = lengths[s];
    }
  ex.reserve({sources * k, src_len, 4});
  ex.encode(ids, len);
  ex.project_memory();
}

// One decode step with a different token in every row; the logits, copied.
std::vector<float> step(executor& ex, const model_config& c, int pos) {
  ibuffer ids(1, ex.rows());
  for (int r = 0; r < ex.rows(); ++r)
    ids(0, r) = 3 + (7 * r + pos) % (c.tgt_vocab - 3);
  const fbuffer logits = ex.decode(ids, pos);
  std::vector<float> out;
  logits.for_each_value([&](float v) { out.push_back(v); });
  return out;
}

void check_close(const std::vector<float>& grouped, const std::vector<float>& copied) {
  REQUIRE(grouped.size() == copied.size());
  // The same arithmetic per query row; only the attention's query tiling may differ:
  // float32 rounding, well within 1e-5 of the logits' scale.
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < copied.size(); ++i)
    scale = std::max(scale, std::abs(double(copied[i]))),
    worst = std::max(worst, std::abs(double(grouped[i]) - copied[i]));
  INFO("largest difference " << worst << " of logits up to " << scale);
  CHECK(worst <= 1e-5 * scale);
}
} // namespace

TEST_CASE("a source's beams share its cross-attention keys and values", "[grouping]") {
  for (const std::string name : {"post_ln_relu", "pre_ln_relu_heads8"}) {
    INFO(name);
    const loaded_model m(name);
    executor grouped(m.config, m.weights), copied(m.config, m.weights);
    encode(grouped, m.config, 1);
    grouped.expand(k);
    encode(copied, m.config, k);
    REQUIRE(grouped.rows() == sources * k);
    CHECK(grouped.sources() == sources);
    CHECK(grouped.memory().dim(2).extent() == sources);
    check_close(step(grouped, m.config, 0), step(copied, m.config, 0));
    // Compaction keeps whole sources (the second leaves), with their keys, values and lengths.
    const std::vector<int> keep{0, 1, 2, 3, 8, 9, 10, 11};
    grouped.keep_rows(keep, 1);
    copied.keep_rows(keep, 1);
    CHECK(grouped.sources() == 2);
    check_close(step(grouped, m.config, 1), step(copied, m.config, 1));
    CHECK_THROWS_WITH(grouped.keep_rows({0, 1}, 2), Catch::Contains("whole sources' blocks of 4"));
    CHECK_THROWS_WITH(grouped.keep_rows({1, 2, 3, 4}, 2), Catch::Contains("whole sources' blocks of 4"));
    CHECK_THROWS_WITH(grouped.decode(ibuffer(2, grouped.rows()), 2), Catch::Contains("one position per call"));
    // Reserved for one position per call (decoding): the activations hold one.
    CHECK_THROWS_WITH(copied.decode(ibuffer(2, copied.rows()), 2),
                      Catch::Contains("2 positions in one call exceed the reserved 1"));
  }
}
