/* The kernel library used from plain C, compiled without any Halide include path
 * or library (only build/include and libhalformer_kernels.a): a LayerNorm and a
 * softmax against values computed here in double, an out-of-range token id, a
 * shape error, and an unknown ISA name, each with its message. */
#include "hf_all.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define EXPECT(cond, ...)                                                                                              \
  do {                                                                                                                 \
    if (!(cond)) {                                                                                                     \
      printf("FAILED %s:%d: %s: ", __FILE__, __LINE__, #cond);                                                         \
      printf(__VA_ARGS__);                                                                                             \
      printf("\n");                                                                                                    \
      ++failures;                                                                                                      \
    }                                                                                                                  \
  } while (0)

/* A dense halide_buffer_t over `data` with extents e[0..dims) (dim 0 innermost). */
static halide_buffer_t make_buffer(void* data, halide_dimension_t* dim, const int* e, int dims, int is_int) {
  halide_buffer_t b;
  memset(&b, 0, sizeof b);
  int stride = 1;
  for (int i = 0; i < dims; ++i) {
    dim[i].min = 0, dim[i].extent = e[i], dim[i].stride = stride, dim[i].flags = 0;
    stride *= e[i];
  }
  b.host = (uint8_t*)data;
  b.type.code = is_int ? halide_type_int : halide_type_float;
  b.type.bits = 32;
  b.type.lanes = 1;
  b.dimensions = dims;
  b.dim = dim;
  return b;
}

enum { D = 10, T = 3 };

static void layernorm_matches(void) {
  float x[T][D], gamma[D], beta[D], out[T][D];
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d)
      x[t][d] = (float)sin(1.0 + d * 0.7 + t);
  for (int d = 0; d < D; ++d)
    gamma[d] = 1.0f + 0.1f * d, beta[d] = 0.01f * d;
  halide_dimension_t dx[3], dg[1], db[1], dout[3];
  int ex[3] = {D, T, 1}, eg[1] = {D};
  halide_buffer_t bx = make_buffer(x, dx, ex, 3, 0), bg = make_buffer(gamma, dg, eg, 1, 0),
                  bb = make_buffer(beta, db, eg, 1, 0), bo = make_buffer(out, dout, ex, 3, 0);
  int rc = hf_layernorm(&bx, &bg, &bb, 1e-5f, &bo);
  EXPECT(rc == 0, "hf_layernorm returned %d: %s", rc, halformer_last_error());
  for (int t = 0; t < T; ++t) {
    double mean = 0, var = 0;
    for (int d = 0; d < D; ++d)
      mean += x[t][d];
    mean /= D;
    for (int d = 0; d < D; ++d)
      var += (x[t][d] - mean) * (x[t][d] - mean);
    var /= D;
    for (int d = 0; d < D; ++d) {
      double want = (x[t][d] - mean) / sqrt(var + 1e-5) * gamma[d] + beta[d];
      EXPECT(fabs(out[t][d] - want) <= 1e-5 * (1 + fabs(want)), "layernorm(%d,%d) = %g, want %g", d, t, out[t][d],
             want);
    }
  }
}

static void softmax_matches(void) {
  float x[T][D], out[T][D];
  int32_t lengths[1] = {7};
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d)
      x[t][d] = (float)cos(d * 1.3 - t);
  halide_dimension_t dx[3], dl[1], dout[3];
  int ex[3] = {D, T, 1}, el[1] = {1};
  halide_buffer_t bx = make_buffer(x, dx, ex, 3, 0), bl = make_buffer(lengths, dl, el, 1, 1),
                  bo = make_buffer(out, dout, ex, 3, 0);
  int rc = hf_softmax(&bx, &bl, 1 /* causal */, 2 /* offset */, &bo);
  EXPECT(rc == 0, "hf_softmax returned %d: %s", rc, halformer_last_error());
  for (int t = 0; t < T; ++t) {
    const int n = t + 2 + 1 < 7 ? t + 2 + 1 : 7; /* keys <= t + offset and < length */
    double m = -1e300, z = 0;
    for (int d = 0; d < n; ++d)
      m = fmax(m, x[t][d]);
    for (int d = 0; d < n; ++d)
      z += exp(x[t][d] - m);
    for (int d = 0; d < D; ++d) {
      double want = d < n ? exp(x[t][d] - m) / z : 0.0;
      EXPECT(fabs(out[t][d] - want) <= 1e-6, "softmax(%d,%d) = %g, want %g", d, t, out[t][d], want);
    }
  }
}

static void errors_have_messages(void) {
  float table[4][3] = {{0}}, out[2][3];
  int32_t ids[2] = {1, 4}; /* 4 is outside a vocabulary of 4 */
  halide_dimension_t dt[2], di[2], dout[3];
  int et[2] = {3, 4}, ei[2] = {2, 1}, eo[3] = {3, 2, 1};
  halide_buffer_t bt = make_buffer(table, dt, et, 2, 0), bi = make_buffer(ids, di, ei, 2, 1),
                  bo = make_buffer(out, dout, eo, 3, 0);
  halformer_clear_error();
  int rc = hf_embedding(&bt, &bi, 1.0f, 0, &bo);
  EXPECT(rc != 0 && strstr(halformer_last_error(), "token id 4"), "rc %d, message '%s'", rc, halformer_last_error());

  int eo_bad[3] = {3, 5, 1}; /* t = 5 but ids have 2 positions */
  float out_bad[5][3];
  halide_buffer_t bo_bad = make_buffer(out_bad, dout, eo_bad, 3, 0);
  ids[1] = 2;
  halformer_clear_error();
  rc = hf_embedding(&bt, &bi, 1.0f, 0, &bo_bad);
  EXPECT(rc != 0 && strstr(halformer_last_error(), "out"), "rc %d, message '%s'", rc, halformer_last_error());

  EXPECT(halformer_force_isa("avx1024") != 0 && strstr(halformer_last_error(), "avx1024"), "unknown ISA accepted");
}

int main(void) {
  if (halformer_kernels_init() != 0) {
    printf("init: %s\n", halformer_last_error());
    return 1;
  }
  printf("C API test on ISA %s\n", halformer_active_isa());
  layernorm_matches();
  softmax_matches();
  errors_have_messages();
  printf("%d failures\n", failures);
  return failures != 0;
}
