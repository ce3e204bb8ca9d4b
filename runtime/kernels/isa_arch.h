/* Internal to the kernel libraries: what ISA selection (isa.c) asks of the CPU
 * architecture the library is built for (isa_x86.c or isa_arm64.c). Levels run
 * from 1 (the baseline) to halformer_isa_levels, each ISA's code a superset of
 * the one below it (cmake/targets.cmake lists their Halide targets). */
#ifndef HALFORMER_ISA_ARCH_H
#define HALFORMER_ISA_ARCH_H

/* The highest level, and each level's name (index 0 unused). */
extern const int halformer_isa_levels;
extern const char* const halformer_isa_names[];

/* The lowest level whose code may use a Halide target feature. */
int halformer_isa_level_of_feature(int feature);

/* Whether the CPU has what a Halide target feature needs, where Halide 21's
 * runtime does not check it itself (1 for the features it checks). */
int halformer_isa_feature_usable(int feature);

/* Whether the CPU runs a level's code. */
int halformer_isa_cpu_has_level(int level);

#endif
