// Wrong shapes or strides passed to a kernel: an error code and a message naming
// the buffer and what is wrong with it (Halide's constraint or bounds message,
// matched in full so that a message naming another buffer fails), never a crash
// or a silent wrong answer.
#include "support.hpp"

using test::Buffer;

TEST_CASE("attention rejects inconsistent shapes", "[errors]") {
  auto q = test::random({16, 4, 2, 1}), k = test::random({16, 9, 2, 1}), v = test::random({16, 9, 2, 1});
  Buffer<int32_t> len(1), rows(9, 1);
  len(0) = 9;
  rows.fill(0);
  Buffer<float> out(16, 4, 2, 1);
  auto v_short = test::random({16, 8, 2, 1});
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v_short, rows, len, false, 0, false, true, out),
                       "Input buffer v is accessed at 8, which is beyond the max (7) in dimension 1");
  auto k_wide = test::random({32, 9, 2, 1});
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k_wide, v, rows, len, false, 0, false, true, out),
                       "k.extent.0 (32) == q.extent.0 (16)");
  Buffer<int32_t> len2(2);
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v, rows, len2, false, 0, false, true, out),
                       "lengths.extent.0 (2) == q.extent.3 (1)");
  Buffer<float> out_bad(16, 5, 2, 1);
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v, rows, len, false, 0, false, true, out_bad),
                       ".extent.1 (5) == q.extent.1 (4)");
  // A row table of 8 keys for 9: read through (own_rows false), the bounds
  // check names it; by address the CPU code never reads it and the shape check
  // names it instead ("kv_rows.extent.0 (8) == k.extent.1 (9)"), while the GPU
  // schedule, which reads it either way, fails its bounds check.
  Buffer<int32_t> rows_short(8, 1);
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v, rows_short, len, false, 0, false, false, out),
                       "Input buffer kv_rows is accessed at 8, which is beyond the max (7) in dimension 0");
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v, rows_short, len, false, 0, false, true, out), "kv_rows");
  auto v_rows = test::random({16, 9, 2, 2});
  REQUIRE_KERNEL_ERROR(HF(attention)(q, k, v_rows, rows, len, false, 0, false, true, out),
                       "v.extent.3 (2) == k.extent.3 (1)");
}

TEST_CASE("projections reject a weight of the wrong width", "[errors]") {
  auto x = test::random({48, 3, 1});
  // Weights (d_model, d_k, heads) in panels: w_bad holds 40 inputs per output where x has 48.
  auto w = test::panels(test::random({48, 16, 3}), 1), w_bad = test::panels(test::random({40, 16, 3}), 1);
  auto b = test::random({16, 3});
  Buffer<float> q(16, 3, 3, 1);
  REQUIRE_KERNEL_ERROR(HF(q_projection)(x, w_bad, b, q),
                       "Input buffer w_q is accessed at 47, which is beyond the max (39) in dimension 2");
  auto b_bad = test::random({16, 2});
  // b_q is the first input to hold heads (w_q's panels pad its outputs): q's 3 heads disagree with it.
  REQUIRE_KERNEL_ERROR(HF(q_projection)(x, w, b_bad, q), "extent.2 (3) == b_q.extent.1 (2)");
  REQUIRE_OK(HF(q_projection)(x, w, b, q));
}

TEST_CASE("layernorm rejects gamma of the wrong size and a non-unit inner stride", "[errors]") {
  auto x = test::random({10, 2, 1});
  auto gamma = test::random({9}), beta = test::random({10});
  Buffer<float> out(10, 2, 1);
  REQUIRE_KERNEL_ERROR(HF(layernorm)(x, gamma, beta, 1e-5f, out),
                       "Input buffer gamma is accessed at 9, which is beyond the max (8) in dimension 0");
  // A transposed view has stride != 1 in dim 0: the kernels require dense rows.
  auto big = test::random({2, 10, 1});
  Buffer<float> xt = big;
  xt.transpose(0, 1);
  auto gamma_ok = test::random({10});
  REQUIRE_KERNEL_ERROR(HF(layernorm)(xt, gamma_ok, beta, 1e-5f, out), "x.stride.0 (2) == 1");
}

TEST_CASE("ffn and logits reject mismatched inner widths", "[errors]") {
  auto x = test::random({8, 2, 1}), r = test::random({8, 2, 1});
  // w2 holds 15 inputs per output where the hidden layer has 16.
  auto w1 = test::panels(test::random({8, 16}), 1), b1 = test::random({16});
  auto w2 = test::panels(test::random({15, 8}), 1), b2 = test::random({8});
  Buffer<float> out(8, 2, 1);
  REQUIRE_KERNEL_ERROR(HF(ffn_relu)(x, r, w1, b1, w2, b2, out),
                       "Input buffer w2 is accessed at 15, which is beyond the max (14) in dimension 2");
  auto w = test::panels(test::random({9, 5}), 1), b = test::random({5});
  Buffer<float> logits(5, 2, 1);
  REQUIRE_KERNEL_ERROR(HF(logits)(x, w, b, logits), "Constraint violated: w.extent.2 (9) == ");
}
