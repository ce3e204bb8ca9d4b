#include "build_lib.hpp"

#include "halformer/error.hpp"
#include "halformer/targets.hpp"
#include "process.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace halformer::tuner {

namespace fs = std::filesystem;

namespace {
std::string run_or_throw(const std::vector<std::string>& argv, const std::string& what, double timeout = 3600) {
  const auto p = run_process(argv, timeout);
  if (!p.ok())
    throw error(what + " failed (" + p.describe() + "): " + (p.err + p.out).substr(0, 3000));
  return p.out;
}

// The CPU kernels' knob file for `--knobs`, taken as HALFORMER_KNOBS takes it:
// host (this machine's choice, made in `build`), defaults, or a knob file. An
// AArch64 library takes the ARM hand defaults for both: this machine's tuning
// says nothing of an ARM CPU.
std::string knob_file_for(const toolchain& t, const std::string& knobs, const std::string& build, bool arm64) {
  if (arm64 && (knobs == "defaults" || knobs == "host"))
    return t.arm64_knob_file;
  if (knobs == "defaults")
    return t.knob_file;
  if (knobs == "host") {
    auto argv = t.knob_choice;
    argv.push_back(build + "/knobs.json");
    std::printf("%s", run_or_throw(argv, "choosing this machine's knob file", 600).c_str());
    return build + "/knobs.json";
  }
  const std::string file = fs::absolute(knobs).string();
  if (!fs::exists(file))
    throw error("--knobs " + knobs + ": no such knob file (expected host, defaults or a knob file)");
  return file;
}
} // namespace

// The GPU API of a Halide target string ("cuda", "opencl"), or "" for a CPU target.
std::string gpu_api(const std::string& target) {
  for (const char* api : {"cuda", "opencl", "metal", "vulkan", "d3d12compute", "webgpu"})
    if (("-" + target + "-").find(std::string("-") + api + "-") != std::string::npos)
      return api;
  return "";
}

std::vector<std::string> expand_targets(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& tg : names) {
    if (tg == "x86")
      for (const auto& [isa, target] : targets::x86)
        out.push_back(target);
    else if (tg == "arm64")
      for (const auto& [isa, target] : targets::arm64)
        out.push_back(target);
    else if (tg == "cuda")
      out.insert(out.end(), std::begin(targets::cuda), std::end(targets::cuda));
    else if (tg == "opencl")
      out.insert(out.end(), std::begin(targets::opencl), std::end(targets::opencl));
    else
      out.push_back(tg);
  }
  return out;
}

// The architecture of a CPU library's targets, "x86" or "arm64": one per library,
// whose Halide runtime and C code are that architecture's (an AArch64 one
// cross-compiled: cmake/aarch64-linux-gnu.cmake).
std::string cpu_arch_of(const std::vector<std::string>& targets) {
  const auto arch = [](const std::string& tg) {
    if (tg.rfind("arm-64-linux", 0) == 0)
      return "arm64";
    if (tg.rfind("x86-64-linux", 0) == 0)
      return "x86";
    throw error("target '" + tg + "': halformer's CPU libraries are for x86-64 and arm-64 (AArch64) Linux");
  };
  for (const auto& tg : targets)
    if (std::string(arch(tg)) != arch(targets.front()))
      throw error("targets '" + targets.front() + "' and '" + tg +
                  "' are of two architectures: build a library for each");
  return arch(targets.front());
}

std::string build_lib(const toolchain& t, const catalog& c, const build_lib_options& o) {
  const std::vector<std::string> targets = expand_targets(o.targets);
  if (targets.empty())
    throw error("build-lib needs --target");
  // One library is one multi-target dispatcher: every target of one GPU API, or
  // every target a CPU one.
  const std::string api = gpu_api(targets.front());
  for (const auto& tg : targets)
    if (gpu_api(tg) != api)
      throw error("targets '" + targets.front() + "' and '" + tg +
                  "' mix devices: build the CPU and each GPU library separately (they link together)");
  if (!api.empty() && api != "cuda" && api != "opencl")
    throw error("target '" + targets.front() + "': halformer has GPU schedules for cuda and opencl only");
  const bool arm64 = api.empty() && cpu_arch_of(targets) == "arm64";
  for (const auto& name : o.kernels)
    c.kernel(name); // an unknown name fails here, listing the kernels
  // The main build's rules (cmake/kernel_library), in OUT/build.
  const std::string build = o.out_dir + "/build";
  fs::create_directories(build);
  const std::string knob_file = knob_file_for(t, o.knobs, build, arm64);
  std::vector<std::string> configure{t.cmake,
                                     "-S",
                                     t.source_dir + "/cmake/kernel_library",
                                     "-B",
                                     build,
                                     "-G",
                                     "Ninja",
                                     "-DCMAKE_MAKE_PROGRAM=" + t.make_program,
                                     "-DCMAKE_BUILD_TYPE=Release",
                                     "-DHalide_DIR=" + t.halide_dir,
                                     "-DHALFORMER_SOURCE_DIR=" + t.source_dir,
                                     "-DHALFORMER_GENERATOR=" + t.generator,
                                     "-DHALFORMER_API=" + (api.empty() ? std::string("cpu") : api),
                                     "-DHALFORMER_LIB_TARGETS=" + join(targets, ";"),
                                     "-DHALFORMER_BUILD_KNOB_FILE=" + knob_file,
                                     "-DHALFORMER_GPU_KNOB_FILE=" + t.gpu_knob_file,
                                     "-DHALFORMER_KERNEL_FILTER=" + join(o.kernels, ";"),
                                     "-DHALFORMER_EMIT=" + join(o.emit, ";")};
  if (arm64)
    configure.push_back("-DCMAKE_TOOLCHAIN_FILE=" + t.source_dir + "/cmake/aarch64-linux-gnu.cmake");
  run_or_throw(configure, "configuring the library build (" + build + ")");
  run_or_throw({t.cmake, "--build", build}, "building the library (" + build + ")");

  const std::string lib_name = api.empty() ? "libhalformer_kernels.a" : "libhalformer_kernels_" + api + ".a";
  fs::copy_file(build + "/lib/" + lib_name, o.out_dir + "/" + lib_name, fs::copy_options::overwrite_existing);
  for (const auto& h : fs::directory_iterator(build + "/include"))
    if (h.is_regular_file())
      fs::copy_file(h.path(), o.out_dir + "/" + h.path().filename().string(), fs::copy_options::overwrite_existing);
  const std::size_t n = o.kernels.empty() ? c.kernels.size() : o.kernels.size();
  return "wrote " + o.out_dir + "/" + lib_name + " (" + std::to_string(n) + " kernels x " +
         std::to_string(targets.size()) + " targets; schedules: " +
         (api.empty() ? "knob file " + knob_file : "the " + api + " defaults of " + t.gpu_knob_file) +
         (o.emit.empty() ? std::string(")") : "; extra outputs in " + build + ")");
}

} // namespace halformer::tuner
