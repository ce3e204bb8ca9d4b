/* ISA forcing and error capture for the multi-target kernels. Halide's dispatcher
 * asks halide_can_use_target_features() for each target's feature set, most
 * specialised first; we answer "no" for sets above the forced level. */
#include "device.h"
#include "errors.h"
#include "halformer_kernels.h"
#include "thread_pool.h"

#include <stdlib.h>
#include <string.h>

/* LEVEL_AVX512_VNNI: Halide's avx512_zen4 set (VNNI and BF16 dot products), which
 * only the dot-product kernels are compiled for (cmake/targets.cmake). */
enum level { LEVEL_SSE41 = 1, LEVEL_AVX2 = 2, LEVEL_AVX512 = 3, LEVEL_AVX512_VNNI = 4, LEVEL_AUTO = 5 };
#define FEATURE_WORDS ((halide_target_feature_end + 63) / 64)

static volatile int forced_level = LEVEL_AUTO;

static int feature_level(int f) {
  switch (f) {
  case halide_target_feature_avx512_cannonlake:
  case halide_target_feature_avx512_sapphirerapids:
  case halide_target_feature_avx512_zen4:
  case halide_target_feature_avx512_zen5:
  case halide_target_feature_avxvnni:
    return LEVEL_AVX512_VNNI;
  case halide_target_feature_avx512:
  case halide_target_feature_avx512_skylake:
  case halide_target_feature_avx512_knl:
    return LEVEL_AVX512;
  case halide_target_feature_avx:
  case halide_target_feature_avx2:
  case halide_target_feature_fma:
  case halide_target_feature_f16c:
    return LEVEL_AVX2;
  default:
    return LEVEL_SSE41;
  }
}

/* Each kernel's dispatcher asks once, on its first call, and caches the answer:
 * after that, forcing another ISA would not take effect everywhere. */
static volatile int dispatched = 0;

/* The instructions of Halide's avx512_zen4 feature set. Halide 21's runtime does
 * not know that feature (it detects it on one AMD model only and otherwise lets
 * a target ask for it unchecked), so an Ice Lake, which has VNNI but no BF16,
 * would be handed vdpbf16ps code: the CPU is asked here. */
static int cpu_has_zen4_set(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bf16") &&
         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("avx512bitalg") &&
         __builtin_cpu_supports("avx512ifma") && __builtin_cpu_supports("avx512vbmi");
}

/* Halide's default answers for CPU features, but for the avx512_vnni level's (asked
 * of the CPU); a CUDA target's capability is checked here against the device's,
 * so the newest PTX it can run is chosen. */
static int can_use(int count, const uint64_t* features) {
  dispatched = 1;
  for (int word = 0; word < count; ++word)
    for (int bit = 0; bit < 64; ++bit)
      if ((features[word] >> bit) & 1) {
        const int f = word * 64 + bit, cap = halformer_cuda_capability_of_feature(f);
        if (feature_level(f) > forced_level)
          return 0;
        if (feature_level(f) == LEVEL_AVX512_VNNI && !cpu_has_zen4_set())
          return 0;
        if (cap && halformer_cuda_capability() < cap)
          return 0;
      }
  return halide_default_can_use_target_features(count, features);
}

static int parse(const char* isa) {
  if (!isa || !strcmp(isa, "auto") || !*isa)
    return LEVEL_AUTO;
  if (!strcmp(isa, "avx512_vnni"))
    return LEVEL_AVX512_VNNI;
  if (!strcmp(isa, "avx512"))
    return LEVEL_AVX512;
  if (!strcmp(isa, "avx2"))
    return LEVEL_AVX2;
  if (!strcmp(isa, "sse41"))
    return LEVEL_SSE41;
  return 0;
}

int halformer_force_isa(const char* isa) {
  int level = parse(isa);
  if (!level) {
    halformer_set_error("unknown ISA '%s' (expected auto, avx512_vnni, avx512, avx2 or sse41)", isa);
    return -1;
  }
  if (dispatched && level != forced_level) {
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

/* The feature sets of the targets in HALFORMER_X86_TARGETS (cmake/targets.cmake). */
static void feature_set(int level, uint64_t words[FEATURE_WORDS]) {
  static const int avx2[] = {halide_target_feature_avx, halide_target_feature_avx2, halide_target_feature_f16c,
                             halide_target_feature_fma, halide_target_feature_sse41};
  memset(words, 0, FEATURE_WORDS * sizeof(uint64_t));
  words[halide_target_feature_sse41 / 64] |= 1ull << (halide_target_feature_sse41 % 64);
  if (level >= LEVEL_AVX2)
    for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; ++i)
      words[avx2[i] / 64] |= 1ull << (avx2[i] % 64);
  if (level >= LEVEL_AVX512) {
    words[halide_target_feature_avx512 / 64] |= 1ull << (halide_target_feature_avx512 % 64);
    words[halide_target_feature_avx512_skylake / 64] |= 1ull << (halide_target_feature_avx512_skylake % 64);
  }
  if (level >= LEVEL_AVX512_VNNI) {
    words[halide_target_feature_avx512_cannonlake / 64] |= 1ull << (halide_target_feature_avx512_cannonlake % 64);
    words[halide_target_feature_avx512_zen4 / 64] |= 1ull << (halide_target_feature_avx512_zen4 % 64);
  }
}

static int cpu_has_level(int level) {
  uint64_t words[FEATURE_WORDS];
  feature_set(level, words);
  return halide_default_can_use_target_features(FEATURE_WORDS, words) &&
         (level != LEVEL_AVX512_VNNI || cpu_has_zen4_set());
}

int halformer_cpu_supports(const char* isa) {
  int level = parse(isa);
  if (!level)
    return 0;
  return level == LEVEL_AUTO || cpu_has_level(level);
}

const char* halformer_active_isa(void) {
  static const char* names[] = {"", "sse41", "avx2", "avx512", "avx512_vnni"};
  for (int level = LEVEL_AVX512_VNNI; level > LEVEL_SSE41; --level)
    if (level <= forced_level && cpu_has_level(level))
      return names[level];
  return names[LEVEL_SSE41];
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
