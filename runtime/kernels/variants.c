/* Shape-bucket dispatch of kernels built as several tuned variants (one per
 * bucket; see halformer_kernels.h), and per-variant call counts. */
#include "halformer_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern void halformer_set_error(const char* msg); /* isa.c */

/* Call counts per (kernel, bucket), in a small table filled on first use. The
 * names are the dispatchers' string literals; a mutex keeps it simple (one
 * uncontended lock per kernel call). */
#define SLOTS 256
static struct {
  const char *kernel, *bucket;
  long calls;
} counts[SLOTS];
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_call(const char* kernel, const char* bucket) {
  pthread_mutex_lock(&counts_lock);
  for (int i = 0; i < SLOTS; ++i)
    if (!counts[i].kernel || (!strcmp(counts[i].kernel, kernel) && !strcmp(counts[i].bucket, bucket))) {
      counts[i].kernel = kernel, counts[i].bucket = bucket, ++counts[i].calls;
      break;
    }
  pthread_mutex_unlock(&counts_lock);
}

long halformer_variant_calls(const char* kernel, const char* bucket) {
  long n = 0;
  pthread_mutex_lock(&counts_lock);
  for (int i = 0; i < SLOTS && counts[i].kernel; ++i)
    if (!strcmp(counts[i].kernel, kernel) && !strcmp(counts[i].bucket, bucket))
      n = counts[i].calls;
  pthread_mutex_unlock(&counts_lock);
  return n;
}

const char* halformer_shape_bucket(int t, int batch) { return t > 1 ? "prefill" : batch == 1 ? "decode1" : "decode"; }

/* Preference when a kernel has no variant for the shape's own bucket: the
 * nearest regime first (every variant is correct for every shape). */
static const char* const order_prefill[] = {"prefill", "decode", "decode1"};
static const char* const order_decode[] = {"decode", "prefill", "decode1"};
static const char* const order_decode1[] = {"decode1", "decode", "prefill"};

int halformer_choose_variant(const char* kernel, const struct halide_filter_metadata_t* md, void** args,
                             const char* const* buckets, int n) {
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
  const int t = out->dim[d >= 3 ? 1 : 0].extent, batch = out->dim[d - 1].extent;
  const char* const* order = t > 1 ? order_prefill : batch == 1 ? order_decode1 : order_decode;
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < n; ++i)
      if (!strcmp(buckets[i], order[o])) {
        count_call(kernel, buckets[i]);
        return i;
      }
  count_call(kernel, buckets[0]);
  return 0;
}
