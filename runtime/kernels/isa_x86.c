/* The x86 ISA levels: sse41, avx2, avx512 (Skylake set), avx512_vnni
 * (Halide's avx512_zen4 set: VNNI and BF16 dot products) and amx (that set with
 * Halide's avx512_sapphirerapids: AMX tiles), which only the dot-product kernels
 * are compiled for (cmake/targets.cmake). */
#include "amx.h"
#include "isa_arch.h"

#include "HalideRuntime.h"

#include <stdint.h>
#include <string.h>

enum { LEVEL_SSE41 = 1, LEVEL_AVX2 = 2, LEVEL_AVX512 = 3, LEVEL_AVX512_VNNI = 4, LEVEL_AMX = 5 };
#define FEATURE_WORDS ((halide_target_feature_end + 63) / 64)

const int halformer_isa_levels = LEVEL_AMX;
const char* const halformer_isa_names[] = {"", "sse41", "avx2", "avx512", "avx512_vnni", "amx"};

int halformer_isa_level_of_feature(int f) {
  switch (f) {
  case halide_target_feature_avx512_sapphirerapids:
    return LEVEL_AMX;
  case halide_target_feature_avx512_cannonlake:
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

/* AMX also needs the OS's tile state, which Halide 21's runtime does not check
 * (nor ask Linux for): amx.c does both. */
int halformer_isa_feature_usable(int f) {
  const int level = halformer_isa_level_of_feature(f);
  return level < LEVEL_AVX512_VNNI || (cpu_has_zen4_set() && (level < LEVEL_AMX || halformer_amx_usable()));
}

/* The feature sets of the x86 targets (cmake/targets.cmake), as Halide asks. */
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
  if (level >= LEVEL_AMX)
    words[halide_target_feature_avx512_sapphirerapids / 64] |= 1ull
                                                               << (halide_target_feature_avx512_sapphirerapids % 64);
}

int halformer_isa_cpu_has_level(int level) {
  uint64_t words[FEATURE_WORDS];
  feature_set(level, words);
  return halide_default_can_use_target_features(FEATURE_WORDS, words) &&
         (level < LEVEL_AVX512_VNNI || cpu_has_zen4_set()) && (level < LEVEL_AMX || halformer_amx_usable());
}
