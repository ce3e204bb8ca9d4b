// Token embedding x scale + sinusoidal positions, and detection of bad token ids.
//
// Tolerance: the position angle pos * freq is formed in float32, so its absolute
// error is about 2 * (pos + 1) * 2^-24 (pos up to ~350 here: ~4e-5); Halide's
// fast_sin / fast_cos reduce it by pi/2 in float32 (k * pi/2 rounded: up to about
// 1.5 * pos * 2^-24 more) and approximate within 1e-5. We allow 2e-5 + 6 * (max
// position + 1) * 2^-24 absolute on top of the usual relative 1e-5.
#include "support.hpp"

#include "halformer/positions.hpp"

using test::Buffer;

TEST_CASE("embedding gathers, scales and adds positions", "[embedding]") {
  // The table lies in panels, as the logits' weight (a tied output layer's is
  // the same buffer): vocabularies of partial panels and panel groups included.
  struct shape {
    int d_model, vocab, t, batch, offset;
    bool split;           // sines then cosines (Marian, fairseq) instead of interleaved
    bool fairseq = false; // frequencies 10000^(-i / (d / 2 - 1)) (M2M100, NLLB)
  };
  for (const auto& s :
       {shape{1, 1, 1, 1, 0, false}, shape{7, 11, 7, 2, 0, false}, shape{64, 100, 64, 3, 5, false},
        shape{333, 50, 7, 1, 1, false}, shape{512, 1000, 1, 8, 200, false}, shape{16, 20, 333, 1, 0, false},
        shape{1, 1, 1, 1, 0, true}, shape{7, 11, 7, 2, 3, true}, shape{512, 1000, 1, 8, 200, true},
        shape{333, 50, 7, 1, 1, true}, shape{333, 50, 9, 2, 1, false}, shape{512, 1000, 3, 5, 0, true},
        shape{40, 65, 2, 3, 0, false}, shape{64, 100, 9, 2, 2, true, true}, shape{512, 1000, 3, 4, 130, true, true},
        shape{6, 7, 333, 1, 2, true, true}}) {
    INFO("d_model " << s.d_model << " vocab " << s.vocab << " t " << s.t << " batch " << s.batch << " offset "
                    << s.offset << " split " << s.split << " fairseq " << s.fairseq);
    const auto logical = test::random({s.d_model, s.vocab});
    auto table = test::panels(logical, 1);
    Buffer<int32_t> ids(s.t, s.batch);
    std::vector<std::vector<int>> id_rows(s.batch, std::vector<int>(s.t));
    ids.for_each_element([&](int t, int b) { ids(t, b) = id_rows[b][t] = int(test::rng()() % unsigned(s.vocab)); });
    const float scale = std::sqrt(float(s.d_model));
    Buffer<float> out(s.d_model, s.t, s.batch);
    const float step = float(halformer::sinusoid_frequency_step(s.d_model, s.fairseq));
    REQUIRE_OK(HF(embedding)(table, ids, s.vocab, scale, s.offset, s.split, step, out));
    const auto want = ref::embedding(test::to_ref(logical), id_rows, scale, s.offset, s.split, s.fairseq);
    const double atol = 2e-5 + 6.0 * (s.t + s.offset + 1) * std::ldexp(1.0, -24);
    double worst = 0;
    std::size_t i = 0;
    out.for_each_element([&](const int* p) {
      const double w = want.data[i++], g = out(p);
      worst = std::max(worst, std::abs(g - w) - (atol + test::rtol * std::abs(w)));
    });
    INFO("worst excess over tolerance " << worst << " (atol " << atol << ")");
    CHECK(worst <= 0);
  }
}

TEST_CASE("out-of-range token ids are an error naming the id", "[embedding][errors]") {
  // 10 entries in a panel group of 64: ids 10-63 lie in the table's padding, and
  // must fail as any other id past the vocabulary does.
  auto table = test::panels(test::random({8, 10}), 1);
  Buffer<int32_t> ids(4, 2);
  Buffer<float> out(8, 4, 2);
  for (int bad : {10, 63, -1, 1 << 30}) {
    ids.fill(3);
    ids(2, 1) = bad;
    REQUIRE_KERNEL_ERROR(HF(embedding)(table, ids, 10, 1.0f, 0, false, 0.1f, out), "token id " + std::to_string(bad));
  }
}

TEST_CASE("a vocabulary size the table's panels cannot hold is an error", "[embedding][errors]") {
  auto table = test::panels(test::random({8, 10}), 1); // one panel group: 1 to 64 entries
  Buffer<int32_t> ids(4, 2);
  ids.fill(3);
  Buffer<float> out(8, 4, 2);
  REQUIRE_OK(HF(embedding)(table, ids, 64, 1.0f, 0, false, 0.1f, out));
  REQUIRE_KERNEL_ERROR(HF(embedding)(table, ids, 65, 1.0f, 0, false, 0.1f, out),
                       "Input buffer table is accessed at 4, which is beyond the max (3) in dimension 3");
  for (int bad : {0, -5})
    REQUIRE_KERNEL_ERROR(HF(embedding)(table, ids, bad, 1.0f, 0, false, 0.1f, out), "table.extent.3 (4) == ");
}
