/* AMX usability (amx.h). */
#include "amx.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
  CPUID7_EDX_AMX_BF16 = 1u << 22,
  CPUID7_EDX_AMX_TILE = 1u << 24,
  CPUID7_EDX_AMX_INT8 = 1u << 25,
  CPUID1_ECX_OSXSAVE = 1u << 27,
  XFEATURE_XTILECFG = 17,
  XFEATURE_XTILEDATA = 18,
  ARCH_REQ_XCOMP_PERM = 0x1023
};

static int cpu_and_os_have_amx(void) {
  unsigned a, b, c, d;
  const unsigned amx = CPUID7_EDX_AMX_BF16 | CPUID7_EDX_AMX_TILE | CPUID7_EDX_AMX_INT8;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & amx) != amx)
    return 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & CPUID1_ECX_OSXSAVE)) /* no xgetbv */
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const unsigned tile_state = (1u << XFEATURE_XTILECFG) | (1u << XFEATURE_XTILEDATA);
  return (lo & tile_state) == tile_state;
}

int halformer_amx_usable(void) {
  /* Idempotent: threads racing here ask twice and agree. */
  static int usable = -1;
  if (usable < 0)
    usable = cpu_and_os_have_amx() && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
  return usable;
}
#else
int halformer_amx_usable(void) { return 0; }
#endif
