/* Misbehaving layernorm candidates for the tuner's tests: one computes a wrong
 * answer, one crashes, one hangs. Selected by -DWRONG, -DCRASH or -DHANG. */
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
