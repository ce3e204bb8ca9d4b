/* GPU devices for the kernel libraries: is a CUDA or OpenCL device usable, and
 * which CUDA compute capability does device 0 have (the CUDA library's dispatcher
 * picks the newest PTX the device can run; see isa.c).
 *
 * CUDA is probed through the driver API (libcuda.so.1, loaded with dlopen, as the
 * Halide runtime itself loads it), OpenCL by allocating and freeing a small buffer
 * through the Halide runtime's OpenCL module. Failures say why in halformer_last_error(). */
#include "device.h"
#include "errors.h"
#include "halformer_kernels.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* From the Halide runtime's CUDA and OpenCL modules (HalideRuntimeCuda.h, ...OpenCL.h). */
extern const struct halide_device_interface_t* halide_cuda_device_interface(void);
extern const struct halide_device_interface_t* halide_opencl_device_interface(void);

static int cuda_capability = -1; /* -1: not probed; 0: none */

int halformer_cuda_capability(void) {
  if (cuda_capability >= 0)
    return cuda_capability;
  cuda_capability = 0;
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib)
    lib = dlopen("libcuda.so", RTLD_LAZY | RTLD_LOCAL);
  if (!lib) {
    halformer_set_error("no CUDA driver: libcuda.so.1 cannot be loaded (is the NVIDIA driver installed?)");
    return 0;
  }
  typedef int (*init_t)(unsigned);
  typedef int (*count_t)(int*);
  typedef int (*get_t)(int*, int);
  typedef int (*attr_t)(int*, int, int);
  init_t init = (init_t)dlsym(lib, "cuInit");
  count_t count = (count_t)dlsym(lib, "cuDeviceGetCount");
  get_t get = (get_t)dlsym(lib, "cuDeviceGet");
  attr_t attr = (attr_t)dlsym(lib, "cuDeviceGetAttribute");
  int n = 0, dev = 0, major = 0, minor = 0, rc;
  if (!init || !count || !get || !attr) {
    halformer_set_error("the CUDA driver lacks cuInit/cuDeviceGetAttribute");
    return 0;
  }
  if ((rc = init(0)) != 0 || (rc = count(&n)) != 0 || n == 0) {
    halformer_set_error("no CUDA device (cuInit/cuDeviceGetCount: error %d, %d devices)", rc, n);
    return 0;
  }
  /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76 */
  if (get(&dev, 0) != 0 || attr(&major, 75, dev) != 0 || attr(&minor, 76, dev) != 0) {
    halformer_set_error("cannot read the CUDA device's compute capability");
    return 0;
  }
  cuda_capability = major * 10 + minor;
  return cuda_capability;
}

int halformer_cuda_capability_of_feature(int feature) {
  switch (feature) {
  case halide_target_feature_cuda_capability30:
    return 30;
  case halide_target_feature_cuda_capability32:
    return 32;
  case halide_target_feature_cuda_capability35:
    return 35;
  case halide_target_feature_cuda_capability50:
    return 50;
  case halide_target_feature_cuda_capability61:
    return 61;
  case halide_target_feature_cuda_capability70:
    return 70;
  case halide_target_feature_cuda_capability75:
    return 75;
  case halide_target_feature_cuda_capability80:
    return 80;
  case halide_target_feature_cuda_capability86:
    return 86;
  default:
    return 0;
  }
}

static int probe(const struct halide_device_interface_t* iface, const char* api) {
  float host[4] = {0};
  halide_dimension_t dim = {0, 4, 1, 0};
  halide_buffer_t buf;
  memset(&buf, 0, sizeof buf);
  buf.host = (uint8_t*)host;
  buf.type.code = halide_type_float;
  buf.type.bits = 32;
  buf.type.lanes = 1;
  buf.dimensions = 1;
  buf.dim = &dim;
  halformer_clear_error();
  int rc = halide_device_malloc(NULL, &buf, iface);
  if (rc == 0)
    halide_device_free(NULL, &buf);
  if (rc != 0) {
    char why[4096];
    snprintf(why, sizeof why, "%s", halformer_last_error());
    halformer_set_error("no usable %s device: %s", api, why);
  }
  return rc == 0;
}

int halformer_device_available(const char* api) {
  if (!strcmp(api, "cpu"))
    return 1;
  if (!strcmp(api, "cuda"))
    return halformer_cuda_capability() > 0 && probe(halide_cuda_device_interface(), "CUDA");
  if (!strcmp(api, "opencl"))
    return probe(halide_opencl_device_interface(), "OpenCL");
  halformer_set_error("unknown device '%s' (expected cpu, cuda or opencl)", api);
  return 0;
}

const struct halide_device_interface_t* halformer_device_interface(const char* api) {
  if (!strcmp(api, "cuda"))
    return halide_cuda_device_interface();
  if (!strcmp(api, "opencl"))
    return halide_opencl_device_interface();
  return NULL;
}
