/* AMX, Intel's tile unit (AMX-TILE with AMX-INT8 and AMX-BF16), on x86-64
 * Linux: whether this process may use it. Shared by the kernel libraries' ISA
 * selection and the machine's peak probes (common/src/machine.cpp). */
#ifndef HALFORMER_AMX_H
#define HALFORMER_AMX_H

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when CPUID reports AMX-TILE, AMX-INT8 and AMX-BF16, XCR0 says the OS saves
 * the tile state (XTILECFG and XTILEDATA) and Linux has granted it to this
 * process; 0 otherwise (and off x86-64 Linux). The first call asks Linux for the
 * tile state (arch_prctl ARCH_REQ_XCOMP_PERM, which Halide 21's runtime never
 * does: a tile instruction without it dies of SIGILL); the permission is the
 * whole process's and is inherited across fork. */
int halformer_amx_usable(void);

#ifdef __cplusplus
}
#endif

#endif
