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
// host (this machine's choice, made in `build`), defaults, or a knob file.
std::string knob_file_for(const toolchain& t, const std::string& knobs, const std::string& build) {
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
    else if (tg == "cuda")
      out.insert(out.end(), std::begin(targets::cuda), std::end(targets::cuda));
    else if (tg == "opencl")
      out.insert(out.end(), std::begin(targets::opencl), std::end(targets::opencl));
    else
      out.push_back(tg);
  }
  return out;
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
  for (const auto& name : o.kernels)
    c.kernel(name); // an unknown name fails here, listing the kernels
  // The main build's rules (cmake/kernel_library), in OUT/build.
  const std::string build = o.out_dir + "/build";
  fs::create_directories(build);
  const std::string knob_file = knob_file_for(t, o.knobs, build);
  run_or_throw({t.cmake, "-S", t.source_dir + "/cmake/kernel_library", "-B", build, "-G", "Ninja",
                "-DCMAKE_MAKE_PROGRAM=" + t.make_program, "-DCMAKE_BUILD_TYPE=Release", "-DHalide_DIR=" + t.halide_dir,
                "-DHALFORMER_SOURCE_DIR=" + t.source_dir, "-DHALFORMER_GENERATOR=" + t.generator,
                "-DHALFORMER_API=" + (api.empty() ? std::string("cpu") : api),
                "-DHALFORMER_LIB_TARGETS=" + join(targets, ";"), "-DHALFORMER_BUILD_KNOB_FILE=" + knob_file,
                "-DHALFORMER_GPU_KNOB_FILE=" + t.gpu_knob_file, "-DHALFORMER_KERNEL_FILTER=" + join(o.kernels, ";"),
                "-DHALFORMER_EMIT=" + join(o.emit, ";")},
               "configuring the library build (" + build + ")");
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
