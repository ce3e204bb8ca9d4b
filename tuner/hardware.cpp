#include "hardware.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>

#include <algorithm>
#include <dlfcn.h>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace halformer::tuner {

std::string hardware::key() const { return cpu + "|" + features + "|" + std::to_string(cores); }

std::string hardware::slug() const {
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

hardware this_machine() {
  hardware h;
  std::ifstream in("/proc/cpuinfo");
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

std::string hardware_key(const hardware& hw, const std::string& isa) {
  if (isa != "opencl")
    return hw.key();
  static const std::string device = opencl_device(); // loads libOpenCL and its ICDs: once per process
  return hw.key() + "|opencl:" + device;
}

} // namespace halformer::tuner
