// qkv/kv/q projections, out projection and logits against the float64 reference,
// their weights in panels (halformer/dsl/panels.hpp), over awkward shapes:
// register tiles of prefill and decode (t = 1, blocked over the batch), widths
// of partial panels and panel groups.
#include "support.hpp"

using test::Buffer;

namespace {
struct proj_shape {
  int d_k, heads, t, batch;
};
// Every d_k of the issue, heads 1..8, t 1/7/64/333, batch 1..3, and decode with
// 3, 7, 8 and 32 rows (whole register tiles of rows and tails shifted inwards).
const proj_shape proj_shapes[] = {{16, 1, 1, 1}, {16, 3, 7, 2},  {32, 8, 64, 1}, {64, 2, 333, 3}, {32, 5, 1, 3},
                                  {64, 8, 1, 8}, {16, 7, 64, 2}, {64, 1, 7, 1},  {16, 3, 1, 7},   {64, 8, 1, 32}};

struct head_weights {
  Buffer<float> rows, w, b; // rows: (d_model, d_k, heads), w: the same in panels
};
head_weights random_head_weights(int d_k, int heads, int d_model) {
  auto rows = test::random({d_model, d_k, heads}, 1.0f / std::sqrt(float(d_model)));
  return {rows, test::panels(rows, 1), test::random({d_k, heads}, 0.1f)};
}
ref::tensor reference_projection(const ref::tensor& x, const head_weights& hw, int heads) {
  return ref::split_heads(ref::linear(x, test::dot_weight_to_ref(hw.rows, 1), test::head_bias_to_ref(hw.b)), heads);
}

// One projection call's random input and weights, its outputs, and the check
// of each output against the reference.
struct projection_case {
  proj_shape s;
  int dm = s.d_k * s.heads;
  Buffer<float> x = test::random({dm, s.t, s.batch});
  head_weights wq = random_head_weights(s.d_k, s.heads, dm), wk = random_head_weights(s.d_k, s.heads, dm),
               wv = random_head_weights(s.d_k, s.heads, dm);
  Buffer<float> q{s.d_k, s.t, s.heads, s.batch}, k{s.d_k, s.t, s.heads, s.batch}, v{s.d_k, s.t, s.heads, s.batch};
  std::string name() const {
    return "d_k " + std::to_string(s.d_k) + " heads " + std::to_string(s.heads) + " t " + std::to_string(s.t) +
           " batch " + std::to_string(s.batch);
  }
  void check() const {
    const auto xr = test::to_ref(x);
    CHECK_CLOSE(q, reference_projection(xr, wq, s.heads), test::rtol);
    CHECK_CLOSE(k, reference_projection(xr, wk, s.heads), test::rtol);
    CHECK_CLOSE(v, reference_projection(xr, wv, s.heads), test::rtol);
  }
};
} // namespace

TEST_CASE("qkv_projection matches the float64 reference", "[projection]") {
  for (const auto& s : proj_shapes) {
    projection_case c{s};
    INFO(c.name());
    REQUIRE_OK(HF(qkv_projection)(c.x, c.wq.w, c.wk.w, c.wv.w, c.wq.b, c.wk.b, c.wv.b, c.q, c.k, c.v));
    c.check();
  }
}

TEST_CASE("kv_projection and q_projection match the reference", "[projection]") {
  // Prefill, decode and one-row decode: each shape variant of the library.
  for (const auto& s :
       {proj_shape{16, 3, 7, 2}, proj_shape{64, 8, 64, 1}, proj_shape{32, 2, 1, 3}, proj_shape{64, 5, 1, 1}}) {
    projection_case c{s};
    INFO(c.name());
    REQUIRE_OK(HF(kv_projection)(c.x, c.wk.w, c.wv.w, c.wk.b, c.wv.b, c.k, c.v));
    REQUIRE_OK(HF(q_projection)(c.x, c.wq.w, c.wq.b, c.q));
    c.check();
  }
}

TEST_CASE("projections write into strided views (a KV cache slot)", "[projection]") {
  // K/V written at positions [pos, pos + t) of a cache with room for 40 tokens,
  // laid out (d_k, heads, capacity, batch) in memory: the runtime's cache layout.
  const int d_k = 16, heads = 3, dm = d_k * heads, t = 5, batch = 2, capacity = 40, pos = 9;
  auto x = test::random({dm, t, batch});
  auto wk = random_head_weights(d_k, heads, dm), wv = random_head_weights(d_k, heads, dm);
  Buffer<float> k_cache(d_k, heads, capacity, batch), v_cache(d_k, heads, capacity, batch);
  k_cache.fill(123.0f), v_cache.fill(123.0f);
  // Logical (d_k, t, heads, batch) views of the slot.
  auto view = [&](Buffer<float>& cache) {
    Buffer<float> v = cache.cropped(2, pos, t);
    v.transpose(1, 2);            // -> (d_k, t, heads, batch)
    v.translate({0, -pos, 0, 0}); // kernels want min 0
    return v;
  };
  Buffer<float> k = view(k_cache), v = view(v_cache);
  REQUIRE_OK(HF(kv_projection)(x, wk.w, wv.w, wk.b, wv.b, k, v));
  const auto xr = test::to_ref(x);
  CHECK_CLOSE(k, reference_projection(xr, wk, heads), test::rtol);
  CHECK_CLOSE(v, reference_projection(xr, wv, heads), test::rtol);
  int untouched = 0;
  k_cache.for_each_element(
      [&](int j, int h, int p, int b) { untouched += (p < pos || p >= pos + t) && k_cache(j, h, p, b) == 123.0f; });
  CHECK(untouched == d_k * heads * (capacity - t) * batch);
}

TEST_CASE("out_projection merges heads, projects and adds bias and residual", "[projection]") {
  for (const auto& s : proj_shapes) {
    const int dm = s.d_k * s.heads;
    INFO("d_k " << s.d_k << " heads " << s.heads << " t " << s.t << " batch " << s.batch);
    auto a = test::random({s.d_k, s.t, s.heads, s.batch});
    auto rows = test::random({s.d_k, s.heads, dm}, 1.0f / std::sqrt(float(dm))); // inputs (d_k, heads)
    auto b = test::random({dm}, 0.1f), residual = test::random({dm, s.t, s.batch});
    Buffer<float> out(dm, s.t, s.batch);
    REQUIRE_OK(HF(out_projection)(a, test::panels(rows, 2), b, residual, out));
    const auto wr = test::dot_weight_to_ref(rows, 2); // (out, in = h * d_k + j)
    auto want = ref::add(test::to_ref(residual), ref::linear(ref::merge_heads(test::to_ref(a)), wr, test::to_ref(b)));
    CHECK_CLOSE(out, want, test::rtol);
  }
}

TEST_CASE("logits match the reference for awkward vocabularies", "[projection]") {
  struct shape {
    int d_model, vocab, t, batch;
  };
  for (const auto& s : {shape{7, 1, 1, 1}, shape{64, 7, 7, 2}, shape{333, 1000, 3, 1}, shape{64, 333, 64, 3},
                        shape{48, 500, 1, 8}, shape{40, 65, 1, 5}, shape{512, 129, 1, 32}, shape{13, 200, 333, 1}}) {
    INFO("d_model " << s.d_model << " vocab " << s.vocab << " t " << s.t << " batch " << s.batch);
    auto x = test::random({s.d_model, s.t, s.batch});
    auto rows = test::random({s.d_model, s.vocab}, 1.0f / std::sqrt(float(s.d_model)));
    auto b = test::random({s.vocab}, 0.1f);
    Buffer<float> out(s.vocab, s.t, s.batch);
    REQUIRE_OK(HF(logits)(x, test::panels(rows, 1), b, out));
    // A logit of N(0, 1) inputs and N(0, 1 / d_model) weights is ~N(0, 1): vocabulary
    // 1 has one, whose cancellation (seed 3069858206: -0.0018 of seven ~0.4 terms)
    // its own rms would not allow for.
    CHECK_CLOSE_AT(out, ref::linear(test::to_ref(x), test::dot_weight_to_ref(rows, 1), test::to_ref(b)), test::rtol,
                   1.0);
  }
}
