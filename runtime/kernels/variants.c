/* Shape-bucket dispatch of kernels built as several tuned variants (one per
 * bucket; see halformer_kernels.h), and per-variant call counts. */
#include "halformer_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern void halformer_set_error(const char* msg); /* isa.c */

/* Every dispatcher keeps its own call counters (an atomic add per call); a
 * counter is entered here the first time it leaves 0, so only that first call
 * takes the lock. */
#define SLOTS 256
static struct {
  const char *kernel, *bucket;
  const long* calls;
} registry[SLOTS];
static int registered;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_call(const char* kernel, const char* bucket, long* calls) {
  if (__atomic_fetch_add(calls, 1, __ATOMIC_RELAXED) != 0)
    return;
  pthread_mutex_lock(&registry_lock);
  if (registered < SLOTS) {
    registry[registered].kernel = kernel, registry[registered].bucket = bucket;
    registry[registered].calls = calls;
    ++registered;
  }
  pthread_mutex_unlock(&registry_lock);
}

long halformer_variant_calls(const char* kernel, const char* bucket) {
  long n = 0;
  pthread_mutex_lock(&registry_lock);
  for (int i = 0; i < registered; ++i)
    if (!strcmp(registry[i].kernel, kernel) && !strcmp(registry[i].bucket, bucket))
      n += __atomic_load_n(registry[i].calls, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&registry_lock);
  return n;
}

const char* halformer_shape_bucket(int t, int batch) { return t > 1 ? "prefill" : batch == 1 ? "decode1" : "decode"; }

/* Preference when a kernel has no variant for the shape's own bucket: the
 * nearest regime first (every variant is correct for every shape). */
static const char* const preference[3][3] = {
    {"prefill", "decode", "decode1"}, {"decode", "prefill", "decode1"}, {"decode1", "decode", "prefill"}};

int halformer_choose_variant(const char* kernel, const struct halide_filter_metadata_t* md, void** args,
                             const char* const* buckets, int n, long* calls) {
  const struct halide_buffer_t* out = NULL;
  for (int i = 0; i < md->num_arguments && !out; ++i)
    if (md->arguments[i].kind == halide_argument_kind_output_buffer)
      out = (const struct halide_buffer_t*)args[i];
  if (!out || out->dimensions < 2) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s: no output buffer of rank >= 2 to choose a shape variant by", kernel);
    halformer_set_error(msg);
    return -1;
  }
  /* Outputs are (features..., t, [heads], batch): t is dim 1 (dim 0 of a (t, batch) output). */
  const int d = out->dimensions;
  const char* own = halformer_shape_bucket(out->dim[d >= 3 ? 1 : 0].extent, out->dim[d - 1].extent);
  int row = 0;
  while (strcmp(preference[row][0], own) != 0)
    ++row;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < n; ++i)
      if (!strcmp(buckets[i], preference[row][p])) {
        count_call(kernel, buckets[i], &calls[i]);
        return i;
      }
  count_call(kernel, buckets[0], &calls[0]);
  return 0;
}
