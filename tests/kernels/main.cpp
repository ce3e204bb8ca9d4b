// Runs the kernel tests on one ISA path: HALFORMER_ISA (avx512_vnni, avx512, avx2,
// sse41, auto)
// chooses it; ctest runs this binary once per ISA. A CPU without the requested ISA
// exits 77, which ctest reports as skipped (never silently passed).
// Built with HALFORMER_TEST_OPENCL, the same tests run the OpenCL kernels; no
// OpenCL device is a failure (CI installs PoCL), not a skip.
#define CATCH_CONFIG_RUNNER
#include "support.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace test {
static std::uint32_t seed_value;
std::mt19937& rng() {
  static std::mt19937 r(seed_value);
  return r;
}
} // namespace test

int main(int argc, char** argv) {
  if (halformer_kernels_init() != 0) {
    std::fprintf(stderr, "halformer_kernels_init: %s\n", halformer_last_error());
    return 2;
  }
#ifdef HALFORMER_TEST_OPENCL
  if (!halformer_device_available("opencl")) {
    std::fprintf(stderr, "%s\n", halformer_last_error());
    return 2;
  }
  const char* backend = "OpenCL";
#else
  const char* backend = halformer_active_isa();
#endif
  const char* want = std::getenv("HALFORMER_ISA");
  if (want && *want && std::strcmp(want, "auto") != 0) {
    if (!halformer_cpu_supports(want)) {
      std::printf("this CPU lacks %s: test skipped\n", want);
      return 77;
    }
    if (std::strcmp(halformer_active_isa(), want) != 0) {
      std::fprintf(stderr, "HALFORMER_ISA=%s but the kernels run %s\n", want, halformer_active_isa());
      return 2;
    }
  }
  const char* seed = std::getenv("HALFORMER_TEST_SEED");
  test::seed_value = seed ? std::uint32_t(std::strtoul(seed, nullptr, 10)) : std::random_device{}();
  std::printf("kernel tests: %s, seed %u (HALFORMER_TEST_SEED=%u replays)\n", backend, test::seed_value,
              test::seed_value);
  const int failed = Catch::Session().run(argc, argv);
  return failed;
}
