// The facts of the machine halformer runs on, read in one place: its identity
// (CPU model, vector features, cores: what tuned records are keyed by), its
// caches (knob values, measurement sizes) and its FP32 FMA peak (benchmarks).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <string>
#include <thread>

namespace halformer::machine {

// Online logical CPUs (at least 1).
inline int online_cpus() { return int(std::max(1u, std::thread::hardware_concurrency())); }

// The per-core L2 cache in KiB (512 where sysfs does not say).
inline int l2_kib() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index2/size"); // e.g. "512K"
  int kib = 0;
  return in >> kib && kib > 0 ? kib : 512;
}

// The largest cache's bytes, the larger of glibc's answer (CPUID on x86) and the
// kernel's (sysfs, which also knows CPUs glibc does not ask); 0 if neither says.
inline std::size_t last_level_cache_bytes() {
  std::size_t most = 0;
  for (int name : {_SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE, _SC_LEVEL4_CACHE_SIZE})
    most = std::max<std::size_t>(most, std::max(sysconf(name), 0L));
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::size_t kib = 0;
    if (in >> kib)
      most = std::max(most, kib << 10); // "32768K"
  }
  return most;
}

// The identity a schedule is measured on. Lookups of tuned records are exact on
// it: a record from another CPU model, feature set or core count is never used.
struct identity {
  std::string cpu;          // /proc/cpuinfo "model name"
  std::string features;     // the x86 vector features that matter, sorted
  int cores = 0;            // online logical CPUs
  std::string key() const;  // "cpu|features|cores"
  std::string slug() const; // "amd-epyc-avx2-2c-1f3a9c0d": a file name for this hardware's knob file
};

// This machine's identity, from /proc/cpuinfo, or from the file HALFORMER_CPUINFO
// names (tests fake another machine with it).
identity this_machine();

// The OpenCL device the Halide runtime would use (the first device of the first
// platform), "vendor | name | N units", through libOpenCL loaded with dlopen;
// empty if there is none.
std::string opencl_device();

// The measured FP32 FMA peak (GFLOP/s) of `isa` ("avx512" or "avx2") with
// `threads` threads (0: all); 0 when this CPU cannot run that ISA.
double fma_peak_gflops(const std::string& isa, int threads);

// The measured dot-product peak (G operations/s, a multiply-add counted as two)
// of `kind`: "bf16" (vdpbf16ps, AVX-512 BF16), "int8" (vpdpbusd, AVX-512 VNNI),
// "amx_bf16" (tdpbf16ps) or "amx_int8" (tdpbusd, AMX tiles), with `threads`
// threads (0: all); 0 when this CPU (or, for AMX, the OS) lacks it.
double dot_peak_gops(const std::string& kind, int threads);

} // namespace halformer::machine
