/* ISA forcing and error capture for the multi-target kernels. Halide's dispatcher
 * asks halide_can_use_target_features() for each target's feature set, most
 * specialised first; we answer "no" for sets above the forced level, and for
 * features the CPU lacks where Halide 21's runtime does not check them. The
 * levels are the architecture's (isa_arch.h: isa_x86.c, isa_arm64.c). */
#include "device.h"
#include "errors.h"
#include "halformer_kernels.h"
#include "isa_arch.h"
#include "thread_pool.h"

#include <stdlib.h>
#include <string.h>

#define LEVEL_AUTO (halformer_isa_levels + 1)

static volatile int forced_level = -1; /* -1: auto (LEVEL_AUTO is not a constant) */

static int forced(void) { return forced_level < 0 ? LEVEL_AUTO : forced_level; }

/* Each kernel's dispatcher asks once, on its first call, and caches the answer:
 * after that, forcing another ISA would not take effect everywhere. */
static volatile int dispatched = 0;

/* Halide's default answers for CPU features, but for those the architecture
 * checks itself; a CUDA target's capability is checked here against the
 * device's, so the newest PTX it can run is chosen. */
static int can_use(int count, const uint64_t* features) {
  dispatched = 1;
  for (int word = 0; word < count; ++word)
    for (int bit = 0; bit < 64; ++bit)
      if ((features[word] >> bit) & 1) {
        const int f = word * 64 + bit, cap = halformer_cuda_capability_of_feature(f);
        if (halformer_isa_level_of_feature(f) > forced() || !halformer_isa_feature_usable(f))
          return 0;
        if (cap && halformer_cuda_capability() < cap)
          return 0;
      }
  return halide_default_can_use_target_features(count, features);
}

static int parse(const char* isa) {
  if (!isa || !strcmp(isa, "auto") || !*isa)
    return LEVEL_AUTO;
  for (int level = 1; level <= halformer_isa_levels; ++level)
    if (!strcmp(isa, halformer_isa_names[level]))
      return level;
  return 0;
}

int halformer_force_isa(const char* isa) {
  int level = parse(isa);
  if (!level) {
    halformer_set_error("unknown ISA '%s' (expected auto", isa);
    for (int l = halformer_isa_levels; l >= 1; --l)
      halformer_append_error(", %s", halformer_isa_names[l]);
    halformer_append_error(")");
    return -1;
  }
  if (dispatched && level != forced()) {
    halformer_set_error(
        "cannot force ISA '%s': kernels have already chosen theirs (force it before the first kernel call)", isa);
    return -1;
  }
  forced_level = level;
  return 0;
}

int halformer_kernels_init(void) {
  halide_set_custom_can_use_target_features(can_use);
  halide_set_error_handler(halformer_on_halide_error);
  if (!halformer_thread_pool_configured()) {
    const char* threads = getenv("HL_NUM_THREADS");
    halformer_set_num_threads(threads ? atoi(threads) : 0);
  }
  return halformer_force_isa(getenv("HALFORMER_ISA"));
}

int halformer_cpu_supports(const char* isa) {
  int level = parse(isa);
  if (!level)
    return 0;
  return level == LEVEL_AUTO || halformer_isa_cpu_has_level(level);
}

const char* halformer_active_isa(void) {
  for (int level = halformer_isa_levels; level > 1; --level)
    if (level <= forced() && halformer_isa_cpu_has_level(level))
      return halformer_isa_names[level];
  return halformer_isa_names[1];
}

const struct halformer_kernel* halformer_find_kernel(const struct halformer_kernel* list, const char* name) {
  for (const struct halformer_kernel* k = list; k && k->name; ++k)
    if (!strcmp(k->name, name))
      return k;
  halformer_set_error("no kernel '%s' in this library; it has:", name);
  for (const struct halformer_kernel* k = list; k && k->name; ++k)
    halformer_append_error(" %s", k->name);
  return NULL;
}
