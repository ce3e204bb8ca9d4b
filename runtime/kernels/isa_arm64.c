/* The AArch64 ISA levels: neon (ARMv8.0-A Advanced SIMD, every AArch64 CPU) and
 * arm_dot_prod (ARMv8.2-A's sdot/udot with its half-precision arithmetic, Halide's
 * arm_dot_prod and arm_fp16 features), which only the dot-product kernels are
 * compiled for (cmake/targets.cmake). The kernel asks Linux (getauxval(AT_HWCAP))
 * rather than trusting Halide's answer: the level is what the CPU reports. */
#include "isa_arch.h"

#include "HalideRuntime.h"

#include <sys/auxv.h>

#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1 << 9)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

enum { LEVEL_NEON = 1, LEVEL_ARM_DOT_PROD = 2 };

const int halformer_isa_levels = LEVEL_ARM_DOT_PROD;
const char* const halformer_isa_names[] = {"", "neon", "arm_dot_prod"};

int halformer_isa_level_of_feature(int f) {
  switch (f) {
  case halide_target_feature_arm_dot_prod:
  case halide_target_feature_arm_fp16:
    return LEVEL_ARM_DOT_PROD;
  default:
    return LEVEL_NEON;
  }
}

static int hwcap_has(unsigned long bits) { return (getauxval(AT_HWCAP) & bits) == bits; }

int halformer_isa_feature_usable(int f) {
  switch (f) {
  case halide_target_feature_arm_dot_prod:
    return hwcap_has(HWCAP_ASIMDDP);
  case halide_target_feature_arm_fp16:
    return hwcap_has(HWCAP_FPHP | HWCAP_ASIMDHP);
  case halide_target_feature_sve:
  case halide_target_feature_sve2:
    return 0; /* no halformer target uses them */
  default:
    return 1;
  }
}

int halformer_isa_cpu_has_level(int level) {
  return level <= LEVEL_NEON || hwcap_has(HWCAP_ASIMDDP | HWCAP_FPHP | HWCAP_ASIMDHP);
}
