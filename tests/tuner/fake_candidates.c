/* Misbehaving layernorm candidates for the tuner's tests: one computes a wrong
 * answer, one crashes, one hangs. Selected by -DWRONG, -DCRASH or -DHANG. Each
 * has the entry points a Halide AOT function has: candidate(), candidate_argv()
 * and candidate_metadata(), which names the arguments as layernorm's do. */
#include "HalideRuntime.h"

#include <signal.h>
#include <stddef.h>

int candidate(halide_buffer_t* x, halide_buffer_t* gamma, halide_buffer_t* beta, float eps, halide_buffer_t* out) {
  (void)x, (void)gamma, (void)beta, (void)eps;
#if defined(WRONG)
  size_t n = 1;
  for (int i = 0; i < out->dimensions; ++i)
    n *= (size_t)out->dim[i].extent;
  for (size_t i = 0; i < n; ++i)
    ((float*)out->host)[i] = 0.5f; /* dense outputs in the harness */
  return 0;
#elif defined(CRASH)
  raise(SIGSEGV);
  return 0;
#elif defined(HANG)
  for (volatile int spin = 0;; ++spin) {
  }
#endif
}

int candidate_argv(void** args) {
  return candidate((halide_buffer_t*)args[0], (halide_buffer_t*)args[1], (halide_buffer_t*)args[2], *(float*)args[3],
                   (halide_buffer_t*)args[4]);
}

const struct halide_filter_metadata_t* candidate_metadata(void) {
  static const struct halide_filter_argument_t arguments[] = {
      {"x", halide_argument_kind_input_buffer, 3, {halide_type_float, 32, 1}, NULL, NULL, NULL, NULL, NULL},
      {"gamma", halide_argument_kind_input_buffer, 1, {halide_type_float, 32, 1}, NULL, NULL, NULL, NULL, NULL},
      {"beta", halide_argument_kind_input_buffer, 1, {halide_type_float, 32, 1}, NULL, NULL, NULL, NULL, NULL},
      {"eps", halide_argument_kind_input_scalar, 0, {halide_type_float, 32, 1}, NULL, NULL, NULL, NULL, NULL},
      {"out", halide_argument_kind_output_buffer, 3, {halide_type_float, 32, 1}, NULL, NULL, NULL, NULL, NULL},
  };
  static const struct halide_filter_metadata_t md = {1 /* version */, 5, arguments, "x86-64-linux", "candidate"};
  return &md;
}
