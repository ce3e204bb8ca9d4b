// Attention against the float64 reference: every mask case (key padding lengths
// including 1, full and 0; causal with offsets; decode steps against a cache),
// awkward shapes (Tk 1/7/64/333, around and across key-chunk boundaries), strided
// cache views, logits near +-1e4, and k/v rows named per key by a table (a beam's
// shared cache: the reference reads the same rows).
#include "support.hpp"

using test::Buffer;

namespace {
struct case_ {
  int d_k, tq, tk, heads, batch;
  bool causal;
  int offset;
  bool decode_step = false; // the queries are a decode step's (a source's beams): the direct algorithm
};

std::vector<int> random_lengths(int batch, int tk) {
  // Cycle through the edge cases: full, 1, and a random length in between.
  std::vector<int> l(batch);
  for (int b = 0; b < batch; ++b)
    l[b] = b % 3 == 0 ? tk : b % 3 == 1 ? 1 : 1 + int(test::rng()() % unsigned(tk));
  return l;
}

// Every key in its query's own row.
Buffer<int32_t> identity_rows(int tk, int batch) {
  Buffer<int32_t> rows(tk, batch);
  rows.for_each_element([&](int key, int b) { rows(key, b) = b; });
  return rows;
}
// Keys from any of `kv_rows` rows, as beams that share prefixes.
Buffer<int32_t> random_rows(int tk, int batch, int kv_rows) {
  Buffer<int32_t> rows(tk, batch);
  std::uniform_int_distribution<int> any(0, kv_rows - 1);
  rows.for_each_value([&](int32_t& r) { r = any(test::rng()); });
  return rows;
}
// x (d_k, tk, heads, kv_row) as the dense (d_k, tk, heads, batch) the table names.
Buffer<float> gathered(const Buffer<float>& x, const Buffer<int32_t>& rows) {
  Buffer<float> g(x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent(), rows.dim(1).extent());
  g.for_each_element([&](int d, int key, int h, int b) {
    g(d, key, h, b) = x(d, key, h, std::clamp(rows(key, b), 0, x.dim(3).extent() - 1));
  });
  return g;
}

// With shared rows: k and v have batch + 1 rows, each key's row drawn at random.
void check_attention(const case_& c, const std::vector<int>& lengths, float scale = 1.0f, bool shared_rows = true) {
  const int kv_rows = shared_rows ? c.batch + 1 : c.batch;
  INFO("d_k " << c.d_k << " tq " << c.tq << " tk " << c.tk << " heads " << c.heads << " batch " << c.batch << " causal "
              << c.causal << " offset " << c.offset << " decode step " << c.decode_step << " k/v rows " << kv_rows);
  auto q = test::random({c.d_k, c.tq, c.heads, c.batch}, scale),
       k = test::random({c.d_k, c.tk, c.heads, kv_rows}, scale), v = test::random({c.d_k, c.tk, c.heads, kv_rows});
  Buffer<int32_t> rows = shared_rows ? random_rows(c.tk, c.batch, kv_rows) : identity_rows(c.tk, c.batch);
  Buffer<int32_t> len(c.batch);
  for (int b = 0; b < c.batch; ++b)
    len(b) = lengths[b];
  Buffer<float> out(c.d_k, c.tq, c.heads, c.batch);
  REQUIRE_OK(HF(attention)(q, k, v, rows, len, c.causal, c.offset, c.decode_step, false, out));
  CHECK_CLOSE(out,
              ref::attention(test::to_ref(q), test::to_ref(gathered(k, rows)), test::to_ref(gathered(v, rows)), lengths,
                             c.causal, c.offset),
              test::rtol);
  if (shared_rows)
    return;
  // The identity read by address (own_rows): each (query, head) sums in the same
  // order, so the same bits.
  Buffer<float> by_address(c.d_k, c.tq, c.heads, c.batch);
  REQUIRE_OK(HF(attention)(q, k, v, rows, len, c.causal, c.offset, c.decode_step, true, by_address));
  int differ = 0;
  out.for_each_element([&](int d, int t, int h, int b) { differ += out(d, t, h, b) != by_address(d, t, h, b); });
  CHECK(differ == 0);
}
} // namespace

TEST_CASE("attention with key padding matches the reference", "[attention]") {
  for (const auto& c :
       {case_{16, 1, 1, 1, 1, false, 0}, case_{16, 7, 7, 3, 3, false, 0}, case_{32, 64, 64, 8, 2, false, 0},
        case_{64, 7, 333, 2, 3, false, 0}, case_{64, 333, 65, 1, 1, false, 0}, case_{32, 5, 129, 4, 2, false, 0}})
    for (bool shared_rows : {false, true})
      check_attention(c, random_lengths(c.batch, c.tk), 1.0f, shared_rows);
}

TEST_CASE("a k/v row table naming rows outside k reads the nearest row, never outside", "[attention][errors]") {
  const int d_k = 16, tk = 9, heads = 2, batch = 2;
  for (int tq : {3, 1}) { // several queries; a decode step
    INFO("queries " << tq);
    auto q = test::random({d_k, tq, heads, batch}), k = test::random({d_k, tk, heads, batch}),
         v = test::random({d_k, tk, heads, batch});
    Buffer<int32_t> rows(tk, batch), len(batch);
    rows.for_each_element([&](int key, int b) { rows(key, b) = key % 2 ? -5 : 1000; });
    len.fill(tk);
    Buffer<float> out(d_k, tq, heads, batch);
    REQUIRE_OK(HF(attention)(q, k, v, rows, len, false, 0, tq == 1, false, out));
    CHECK_CLOSE(out,
                ref::attention(test::to_ref(q), test::to_ref(gathered(k, rows)), test::to_ref(gathered(v, rows)),
                               {tk, tk}, false, 0),
                test::rtol);
  }
}

TEST_CASE("causal attention with query offsets matches the reference", "[attention][causal]") {
  for (const auto& c :
       {case_{16, 7, 7, 2, 3, true, 0}, case_{32, 64, 64, 8, 1, true, 0}, case_{64, 333, 333, 1, 1, true, 0},
        case_{16, 7, 20, 3, 2, true, 13}, case_{64, 3, 130, 2, 2, true, 100}})
    check_attention(c, random_lengths(c.batch, c.tk));
}

TEST_CASE("decode steps: one query against a cache", "[attention][decode]") {
  // Each through a shared table, and through the identity both ways (own_rows).
  for (bool shared : {false, true}) {
    INFO("shared rows " << shared);
    // Step p of incremental decoding: Tq = 1, keys 0..p, offset p.
    for (int tk : {1, 7, 64, 65, 333})
      for (bool causal : {false, true})
        check_attention(case_{64, 1, tk, 8, 3, causal, tk - 1}, random_lengths(3, tk), 1.0f, shared);
    check_attention(case_{32, 1, 100, 4, 8, true, 99}, std::vector<int>(8, 100), 1.0f, shared);
    // Decode steps read the keys as stored, d_k in blocks of the vector width and a
    // rest: d_k 20 is 2 blocks + 4 on AVX2, 1 + 4 on AVX-512, 5 + 0 on SSE4.1; d_k 7
    // is only the rest.
    for (int d_k : {20, 7})
      check_attention(case_{d_k, 1, 37, 3, 3, true, 36}, random_lengths(3, 37), 1.0f, shared);
    // Tasks of several heads (decode_heads; the test knobs: 8 from 2 rows on, 2 for
    // one row; fewer where the rows leave a core without a task): heads not a
    // multiple of it (the last task overlaps the one before), fewer heads than
    // it, constant and other d_k.
    for (int d_k : {64, 32, 20})
      for (int heads : {10, 9, 5, 1}) {
        check_attention(case_{d_k, 1, 41, heads, 2, true, 40}, random_lengths(2, 41), 1.0f, shared);
        check_attention(case_{d_k, 1, 41, heads, 1, true, 40}, random_lengths(1, 41), 1.0f, shared);
      }
  }
}

TEST_CASE("a decode step's several queries: a source's beams in cross-attention", "[attention][decode]") {
  // decode_step with tq = beams: every query reads all of its source's keys, in
  // tasks of several heads or not, with and without shared rows.
  for (int tk : {1, 7, 128, 333})
    for (int heads : {8, 3})
      for (bool shared_rows : {false, true})
        check_attention(case_{64, 4, tk, heads, 3, false, 0, true}, random_lengths(3, tk), 1.0f, shared_rows);
  for (int d_k : {32, 20, 7})
    check_attention(case_{d_k, 5, 41, 2, 2, false, 0, true}, random_lengths(2, 41));
  // The demo model's beam search (d_k 16, 4 heads, 4 beams, 5 source tokens): a
  // schedule's tiles of the chunked stages once reached q's row -1 here.
  for (bool shared_rows : {false, true})
    check_attention(case_{16, 4, 5, 4, 2, false, 0, true}, {5, 3}, 1.0f, shared_rows);
  check_attention(case_{64, 2, 9, 2, 3, false, 0, true}, {0, 9, 1}); // a source with no keys: zeros
}

TEST_CASE("a decode step's beams each get the bits of a one-query step", "[attention][decode]") {
  // The direct algorithm computes each query alone, so a source's beams decoded
  // together get the bits each would get as a one-query step; the chunked
  // algorithm sums in another order, so this also shows decode_step chose.
  const int d_k = 64, beams = 4, tk = 77, heads = 8, batch = 2;
  auto q = test::random({d_k, beams, heads, batch}), k = test::random({d_k, tk, heads, batch}),
       v = test::random({d_k, tk, heads, batch});
  Buffer<int32_t> len(batch);
  len(0) = tk, len(1) = 30;
  Buffer<float> together(d_k, beams, heads, batch), chunked(d_k, beams, heads, batch);
  REQUIRE_OK(HF(attention)(q, k, v, identity_rows(tk, batch), len, false, 0, true, true, together));
  REQUIRE_OK(HF(attention)(q, k, v, identity_rows(tk, batch), len, false, 0, false, true, chunked));
  int differ_from_chunked = 0;
  for (int beam = 0; beam < beams; ++beam) {
    Buffer<float> one = q.cropped(1, beam, 1), alone(d_k, 1, heads, batch);
    one.translate(1, -beam);
    REQUIRE_OK(HF(attention)(one, k, v, identity_rows(tk, batch), len, false, 0, true, true, alone));
    alone.for_each_element([&](int d, int, int h, int b) {
      CHECK(alone(d, 0, h, b) == together(d, beam, h, b));
      differ_from_chunked += alone(d, 0, h, b) != chunked(d, beam, h, b);
    });
  }
#ifndef HALFORMER_TEST_OPENCL // the GPU knobs set no decode_lanes: every call takes the chunked algorithm
  INFO("elements where the chunked algorithm's bits differ: " << differ_from_chunked);
  CHECK(differ_from_chunked > 0);
#endif
}

TEST_CASE("fully masked rows give zeros, not NaN", "[attention][masks]") {
  // Length 0 masks every key of that batch row.
  for (int tq : {5, 1}) // several queries; a decode step
    check_attention(case_{16, tq, 9, 2, 3, false, 0}, {0, 9, 0});
  // Causal with a negative offset masks the first queries' keys entirely.
  check_attention(case_{16, 6, 6, 1, 1, true, -3}, {6});
}

namespace {
// A cache (d_k, heads, capacity, batch) in memory; the kernel sees (d_k, tk, heads, batch).
void check_strided_cache(int tq) {
  INFO("queries " << tq);
  const int d_k = 32, heads = 4, capacity = 50, tk = 37, batch = 2;
  Buffer<float> k_cache = test::random({d_k, heads, capacity, batch}),
                v_cache = test::random({d_k, heads, capacity, batch});
  Buffer<float> k = k_cache.cropped(2, 0, tk), v = v_cache.cropped(2, 0, tk);
  k.transpose(1, 2), v.transpose(1, 2);
  auto q = test::random({d_k, tq, heads, batch});
  Buffer<int32_t> len(batch);
  len(0) = tk, len(1) = 20;
  Buffer<float> out(d_k, tq, heads, batch);
  REQUIRE_OK(HF(attention)(q, k, v, identity_rows(tk, batch), len, true, tk - tq, tq == 1, true, out));
  CHECK_CLOSE(out, ref::attention(test::to_ref(q), test::to_ref(k), test::to_ref(v), {tk, 20}, true, tk - tq),
              test::rtol);
}
} // namespace

TEST_CASE("attention reads K/V through strided cache views", "[attention][layout]") {
  for (int tq : {3, 1}) // several queries; a decode step
    check_strided_cache(tq);
}

namespace {
void check_large_logits(int tq) {
  // Integer-valued q and k keep q.k exact in float32, so logits of order 1e4 are
  // represented exactly and the reference comparison stays at 1e-5.
  INFO("queries " << tq);
  const int d_k = 16, tk = 70, heads = 2, batch = 1;
  Buffer<float> q(d_k, tq, heads, batch), k(d_k, tk, heads, batch);
  auto v = test::random({d_k, tk, heads, batch});
  std::uniform_int_distribution<int> big(-100, 100);
  q.for_each_value([&](float& x) { x = float(big(test::rng())); });
  k.for_each_value([&](float& x) { x = float(big(test::rng())); });
  Buffer<int32_t> len(batch);
  len(0) = tk;
  Buffer<float> out(d_k, tq, heads, batch);
  REQUIRE_OK(HF(attention)(q, k, v, identity_rows(tk, batch), len, false, 0, false, true, out));
  double max_logit = 0;
  for (int t = 0; t < tq; ++t)
    for (int j = 0; j < tk; ++j) {
      double s = 0;
      for (int i = 0; i < d_k; ++i)
        s += q(i, t, 0, 0) * k(i, j, 0, 0);
      max_logit = std::max(max_logit, std::abs(s) / 4);
    }
  INFO("largest |logit| " << max_logit);
  CHECK(max_logit > 1000);
  CHECK_CLOSE(out, ref::attention(test::to_ref(q), test::to_ref(k), test::to_ref(v), {tk}, false, 0), test::rtol);
}
} // namespace

TEST_CASE("logits near +-1e4 give no NaN or inf", "[attention][numerics]") {
  for (int tq : {4, 1}) // several queries; a decode step
    check_large_logits(tq);
}
