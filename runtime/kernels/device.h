/* Internal to the kernel libraries: what ISA dispatch asks of the CUDA device (device.c). */
#ifndef HALFORMER_DEVICE_H
#define HALFORMER_DEVICE_H

/* The compute capability a cuda_capability_* Halide feature bit asks for, or 0 for other bits. */
int halformer_cuda_capability_of_feature(int feature);

#endif
