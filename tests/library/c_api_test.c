/* The kernel library used from plain C, compiled without any Halide include path
 * or library (only build/include and libhalformer_kernels.a): a LayerNorm and a
 * softmax against values computed here in double, the same LayerNorm looked up
 * by name and called with its arguments placed by their names, an out-of-range
 * token id, a shape error, and an unknown ISA name, each with its message. */
#include "expect.h"
#include "hf_all.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* hf_layernorm's arguments by name, or hf_layernorm itself; both must agree. */
static int call_layernorm(int by_name, halide_buffer_t* x, halide_buffer_t* gamma, halide_buffer_t* beta, float eps,
                          halide_buffer_t* out) {
  if (!by_name)
    return hf_layernorm(x, gamma, beta, eps, out);
  const struct halformer_kernel* k = halformer_find_kernel(halformer_kernels_cpu(), "layernorm");
  EXPECT(k != NULL, "no layernorm in the list: %s", halformer_last_error());
  EXPECT(halformer_find_kernel(halformer_kernels_cpu(), "layernorn") == NULL &&
             strstr(halformer_last_error(), "no kernel 'layernorn'") && strstr(halformer_last_error(), "layernorm"),
         "a misspelled kernel name: %s", halformer_last_error());
  if (!k)
    return -1;
  const struct halide_filter_metadata_t* md = k->metadata();
  void* args[8] = {0};
  EXPECT(md->num_arguments == 5, "layernorm has %d arguments", md->num_arguments);
  for (int i = 0; i < md->num_arguments && i < 8; ++i) {
    const char* n = md->arguments[i].name;
    args[i] = !strcmp(n, "x")       ? (void*)x
              : !strcmp(n, "gamma") ? (void*)gamma
              : !strcmp(n, "beta")  ? (void*)beta
              : !strcmp(n, "eps")   ? (void*)&eps
              : !strcmp(n, "out")   ? (void*)out
                                    : NULL;
    EXPECT(args[i] != NULL, "unexpected argument '%s'", n);
  }
  return k->argv(args);
}

static void layernorm_matches(int by_name) {
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
  memset(out, 0, sizeof out);
  int rc = call_layernorm(by_name, &bx, &bg, &bb, 1e-5f, &bo);
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
  /* A table of d_model 3 and a vocabulary of 4 in panels (halformer_kernels.h):
   * extents (1, 16, 3, 4), one panel group of 64 entries. */
  static float table[4][3][16] = {{{0}}};
  float out[2][3];
  int32_t ids[2] = {1, 4}; /* 4 is outside a vocabulary of 4 (inside the table's padding) */
  halide_dimension_t dt[4], di[2], dout[3];
  int et[4] = {1, 16, 3, 4}, ei[2] = {2, 1}, eo[3] = {3, 2, 1};
  halide_buffer_t bt = make_buffer(table, dt, et, 4, 0), bi = make_buffer(ids, di, ei, 2, 1),
                  bo = make_buffer(out, dout, eo, 3, 0);
  halformer_clear_error();
  int rc = hf_embedding(&bt, &bi, 4, 1.0f, 0, 0, 0.1f, &bo);
  EXPECT(rc != 0 && strstr(halformer_last_error(), "token id 4"), "rc %d, message '%s'", rc, halformer_last_error());

  int eo_bad[3] = {3, 5, 1}; /* t = 5 but ids have 2 positions */
  float out_bad[5][3];
  halide_buffer_t bo_bad = make_buffer(out_bad, dout, eo_bad, 3, 0);
  ids[1] = 2;
  halformer_clear_error();
  rc = hf_embedding(&bt, &bi, 4, 1.0f, 0, 0, 0.1f, &bo_bad);
  EXPECT(rc != 0 && strstr(halformer_last_error(), "out"), "rc %d, message '%s'", rc, halformer_last_error());

  EXPECT(halformer_force_isa("avx1024") != 0 && strstr(halformer_last_error(), "avx1024"), "unknown ISA accepted");
}

int main(void) {
  if (halformer_kernels_init() != 0) {
    printf("init: %s\n", halformer_last_error());
    return 1;
  }
  printf("C API test on ISA %s\n", halformer_active_isa());
  layernorm_matches(0);
  layernorm_matches(1);
  softmax_matches();
  errors_have_messages();
  printf("%d failures\n", failures);
  return failures != 0;
}
