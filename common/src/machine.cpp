// The machine's facts (machine.hpp).
#include "halformer/machine.hpp"

#if defined(__x86_64__)
#include "amx.h"

#include <immintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

namespace halformer::machine {

std::string identity::key() const { return cpu + "|" + features + "|" + std::to_string(cores); }

std::string identity::slug() const {
  std::string name;
  for (char c : cpu)
    if (std::isalnum(static_cast<unsigned char>(c)))
      name += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!name.empty() && name.back() != '-')
      name += '-';
  while (!name.empty() && name.back() == '-')
    name.pop_back();
  const std::string isa = features.find("avx512f") != std::string::npos ? "avx512"
                          : features.find("avx2") != std::string::npos  ? "avx2"
                                                                        : "sse41";
  std::uint32_t h = 2166136261u; // FNV-1a of the whole key: CPUs with one name differ in features or cores
  for (char c : key())
    h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return name + "-" + isa + "-" + std::to_string(cores) + "c-" + hex;
}

identity this_machine() {
  identity h;
  const char* fake = std::getenv("HALFORMER_CPUINFO");
  std::ifstream in(fake && *fake ? fake : "/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && h.cpu.empty())
      h.cpu = value;
    if (key == "flags" && flags.empty()) {
      std::istringstream f(value);
      for (std::string w; f >> w;)
        if (w.rfind("avx", 0) == 0 || w == "fma" || w == "sse4_1" || w == "f16c" || w == "amx_tile")
          flags.insert(w);
    }
  }
  for (const auto& f : flags)
    h.features += (h.features.empty() ? "" : ",") + f;
  h.cores = int(std::thread::hardware_concurrency());
  if (h.cpu.empty())
    h.cpu = "unknown";
  return h;
}

std::string opencl_device() {
  void* lib = dlopen("libOpenCL.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!lib)
    return "";
  using platforms_t = int (*)(unsigned, void**, unsigned*);
  using devices_t = int (*)(void*, unsigned long, unsigned, void**, unsigned*);
  using info_t = int (*)(void*, unsigned, std::size_t, void*, std::size_t*);
  auto platforms = reinterpret_cast<platforms_t>(dlsym(lib, "clGetPlatformIDs"));
  auto devices = reinterpret_cast<devices_t>(dlsym(lib, "clGetDeviceIDs"));
  auto info = reinterpret_cast<info_t>(dlsym(lib, "clGetDeviceInfo"));
  void* platform = nullptr;
  void* device = nullptr;
  unsigned n = 0;
  std::string out;
  constexpr unsigned long all_types = 0xFFFFFFFF; // CL_DEVICE_TYPE_ALL
  if (platforms && devices && info && platforms(1, &platform, &n) == 0 && n > 0 &&
      devices(platform, all_types, 1, &device, &n) == 0 && n > 0) {
    char vendor[256] = {0}, name[256] = {0};
    unsigned units = 0;
    info(device, 0x102C /* CL_DEVICE_VENDOR */, sizeof vendor - 1, vendor, nullptr);
    info(device, 0x102B /* CL_DEVICE_NAME */, sizeof name - 1, name, nullptr);
    info(device, 0x1002 /* CL_DEVICE_MAX_COMPUTE_UNITS */, sizeof units, &units, nullptr);
    out = std::string(vendor) + " | " + name + " | " + std::to_string(units) + " units";
  }
  dlclose(lib);
  return out;
}

#if defined(__x86_64__)
namespace {
// Each loop: 16 independent accumulators (more than latency x issue width on
// every CPU here), one instruction each per iteration.
__attribute__((target("avx512f"))) void fma_avx512(long iters, float* sink) {
  __m512 a[16];
  for (int i = 0; i < 16; ++i)
    a[i] = _mm512_set1_ps(float(i));
  const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (long n = 0; n < iters; ++n)
    for (int i = 0; i < 16; ++i)
      a[i] = _mm512_fmadd_ps(a[i], m, c);
  __m512 s = a[0];
  for (int i = 1; i < 16; ++i)
    s = _mm512_add_ps(s, a[i]);
  *sink = _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) void fma_avx2(long iters, float* sink) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i)
    a[i] = _mm256_set1_ps(float(i));
  const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (long n = 0; n < iters; ++n)
    for (int i = 0; i < 12; ++i)
      a[i] = _mm256_fmadd_ps(a[i], m, c);
  float out[8];
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, a[i]);
  _mm256_storeu_ps(out, s);
  *sink = out[0];
}
// vdpbf16ps: 16 lanes x 2 bfloat16 products and their sum into float32.
__attribute__((target("avx512f,avx512bf16"))) void dot_bf16(long iters, float* sink) {
  __m512 a[16];
  for (int i = 0; i < 16; ++i)
    a[i] = _mm512_set1_ps(float(i));
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = (__m512bh)_mm512_set1_epi32(0x3a833a83);
  for (long n = 0; n < iters; ++n)
    for (int i = 0; i < 16; ++i)
      a[i] = _mm512_dpbf16_ps(a[i], x, y);
  __m512 s = a[0];
  for (int i = 1; i < 16; ++i)
    s = _mm512_add_ps(s, a[i]);
  *sink = _mm512_reduce_add_ps(s);
}
// vpdpbusd: 16 lanes x 4 u8 x s8 products and their sum into int32.
__attribute__((target("avx512f,avx512vnni"))) void dot_vnni(long iters, float* sink) {
  __m512i a[16];
  for (int i = 0; i < 16; ++i)
    a[i] = _mm512_set1_epi32(i);
  const __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
  for (long n = 0; n < iters; ++n)
    for (int i = 0; i < 16; ++i)
      a[i] = _mm512_dpbusd_epi32(a[i], x, y);
  __m512i s = a[0];
  for (int i = 1; i < 16; ++i)
    s = _mm512_add_epi32(s, a[i]);
  *sink = float(_mm512_reduce_add_epi32(s));
}

// AMX: four accumulator tiles of 16 x 16 32-bit sums, each a tile multiply per
// iteration from two A and two B tiles of 16 rows x 64 bytes (palette 1: 8 tiles
// of at most 16 rows x 64 bytes). tdpbusd: 16 x 16 x 64 u8 x s8 products;
// tdpbf16ps: 16 x 16 x 32 bfloat16 ones.
struct alignas(64) tile_config {
  unsigned char palette = 1, start_row = 0, reserved[14] = {};
  unsigned short bytes_per_row[16] = {};
  unsigned char rows[16] = {};
};
__attribute__((target("amx-tile"))) void configure_tiles(const void* operand) {
  tile_config c;
  for (int i = 0; i < 8; ++i)
    c.bytes_per_row[i] = 64, c.rows[i] = 16;
  __asm__ volatile("" : : "r"(&c) : "memory"); // GCC 12 drops the stores ldtilecfg reads otherwise
  _tile_loadconfig(&c);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
}
__attribute__((target("amx-tile"))) void release_tiles(float* sink) {
  alignas(64) float out[256];
  _tile_stored(0, out, 64);
  _tile_release();
  *sink = out[0];
}
__attribute__((target("amx-tile,amx-int8"))) void amx_int8(long iters, float* sink) {
  alignas(64) std::uint8_t operand[16 * 64];
  std::fill(std::begin(operand), std::end(operand), std::uint8_t(1));
  configure_tiles(operand);
  for (long n = 0; n < iters; ++n) { // (intrinsics that are statements)
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  release_tiles(sink);
}
__attribute__((target("amx-tile,amx-bf16"))) void amx_bf16(long iters, float* sink) {
  alignas(64) std::uint16_t operand[16 * 32];
  std::fill(std::begin(operand), std::end(operand), std::uint16_t(0x3f80)); // 1.0
  configure_tiles(operand);
  for (long n = 0; n < iters; ++n) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  release_tiles(sink);
}

// The best of three rounds of `loop` on `threads` threads, in G operations/s.
// A vector loop's iteration takes ~16 cycles, an AMX one (four tile multiplies) ~64.
constexpr long vector_iterations = 20'000'000, amx_iterations = 2'000'000;
double best_rate(void (*loop)(long, float*), double ops_per_iteration, int threads, long iters = vector_iterations) {
  if (threads <= 0)
    threads = online_cpus();
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> pool;
    std::vector<float> sink(static_cast<std::size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] { loop(iters, &sink[i]); });
    for (auto& p : pool)
      p.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, ops_per_iteration * iters * threads / s / 1e9);
  }
  return best;
}
} // namespace

double fma_peak_gflops(const std::string& isa, int threads) {
  // Only what this CPU can run: AVX-512 code on an AVX2-only CPU dies of SIGILL.
  if (isa == "avx512" ? !__builtin_cpu_supports("avx512f") : !__builtin_cpu_supports("fma"))
    return 0;
  return isa == "avx512" ? best_rate(fma_avx512, 16 * 16 * 2, threads) : best_rate(fma_avx2, 12 * 8 * 2, threads);
}

double dot_peak_gops(const std::string& kind, int threads) {
  if (kind == "bf16")
    return __builtin_cpu_supports("avx512bf16") ? best_rate(dot_bf16, 16 * 16 * 2 * 2, threads) : 0;
  if (kind == "int8")
    return __builtin_cpu_supports("avx512vnni") ? best_rate(dot_vnni, 16 * 16 * 4 * 2, threads) : 0;
  if (kind == "amx_bf16")
    return halformer_amx_usable() ? best_rate(amx_bf16, 4 * 16 * 16 * 32 * 2, threads, amx_iterations) : 0;
  if (kind == "amx_int8")
    return halformer_amx_usable() ? best_rate(amx_int8, 4 * 16 * 16 * 64 * 2, threads, amx_iterations) : 0;
  return 0;
}
#else
// No peak probes off x86 (the AArch64 build runs the kernels' tests, not benchmarks).
double fma_peak_gflops(const std::string&, int) { return 0; }
double dot_peak_gops(const std::string&, int) { return 0; }
#endif

} // namespace halformer::machine
