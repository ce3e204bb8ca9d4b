#include "build_lib.hpp"

#include "dispatcher.hpp"
#include "export_knobs.hpp"
#include "halformer/error.hpp"
#include "process.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace halformer::tuner {

namespace fs = std::filesystem;

namespace {
void run_or_throw(const std::vector<std::string>& argv, const std::string& what, double timeout = 600) {
  const auto p = run_process(argv, timeout);
  if (!p.ok())
    throw error(what + " failed (" + p.describe() + "): " + p.err.substr(0, 2000));
}
std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : sep) + x;
  return s;
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
  std::vector<std::string> targets;
  for (const auto& tg : names) {
    if (tg == "x86")
      for (const char* isa : {"avx512", "avx2", "sse41"})
        targets.push_back(target_of_isa(isa));
    else if (tg == "cuda") // PTX for V100, A100, RTX 30; newer GPUs JIT the newest
      for (const char* cap : {"86", "80", "70"})
        targets.push_back(std::string("x86-64-linux-sse41-cuda-cuda_capability_") + cap);
    else if (tg == "opencl")
      targets.push_back("x86-64-linux-sse41-opencl");
    else
      targets.push_back(tg);
  }
  return targets;
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
  const std::string prefix = api.empty() ? "hf_" : "hf_" + api + "_";
  const std::string lib_name = api.empty() ? "libhalformer_kernels.a" : "libhalformer_kernels_" + api + ".a";
  const std::string header_name = api.empty() ? "hf_all.h" : "hf_all_" + api + ".h";
  std::vector<const kernel_info*> kernels;
  if (o.kernels.empty())
    for (const auto& k : c.kernels)
      kernels.push_back(&k);
  else
    for (const auto& name : o.kernels)
      kernels.push_back(&c.kernel(name));

  const std::string obj = o.out_dir + "/obj";
  fs::create_directories(obj);
  const auto hw = this_machine();
  // CPU libraries take this machine's tuned records over the hand defaults; GPU
  // libraries the GPU defaults (schedules/knobs/gpu.json; GPU tuning is per device).
  export_report report;
  std::string knob_file = o.out_dir + "/knobs.json";
  if (api.empty())
    report = export_knobs(t.knob_file, database(o.db_dir), hw, "transformer-base", knob_file, c.revisions,
                          c.variant_plans());
  else
    knob_file = t.gpu_knob_file;
  std::vector<std::string> no_runtime;
  for (const auto& tg : targets)
    no_runtime.push_back(tg + "-no_runtime");
  std::string emit = "static_library,c_header";
  for (const auto& e : o.emit)
    emit += "," + e;
  std::vector<std::string> archives;
  const std::string runtime_dir = fs::path(t.runtime_header).parent_path().string();
  // One multi-target Halide function; `variant`: kernel@bucket, or "".
  auto generate = [&](const kernel_info& k, const std::string& fn, const std::string& variant) {
    std::vector<std::string> argv{t.generator,
                                  "-g",
                                  k.generator,
                                  "-f",
                                  fn,
                                  "-n",
                                  fn,
                                  "-e",
                                  emit,
                                  "-o",
                                  obj,
                                  "target=" + join(no_runtime, ","),
                                  "knob_file=" + knob_file};
    if (!variant.empty())
      argv.push_back("variant=" + variant);
    argv.insert(argv.end(), k.params.begin(), k.params.end());
    run_or_throw(argv, "generating " + fn);
    archives.push_back(obj + "/" + fn + ".a");
  };
  for (const kernel_info* k : kernels) {
    const std::string fn = prefix + k->name;
    // CPU libraries hold the kernel's shape variants behind a dispatcher (as the build does).
    const std::vector<std::string> buckets = api.empty() ? k->buckets : std::vector<std::string>{};
    if (buckets.size() > 1) {
      for (const auto& b : buckets)
        generate(*k, fn + "__" + b, k->name + "@" + b);
      write_dispatcher(obj, fn, k->name, buckets);
      run_or_throw({t.cc, "-std=c11", "-O2", "-fPIC", "-c", "-I" + obj,
                    "-I" + fs::path(t.kernel_header).parent_path().string(), "-I" + runtime_dir,
                    obj + "/" + fn + "_dispatch.c", "-o", obj + "/" + fn + "_dispatch.o"},
                   "compiling the dispatcher of " + fn);
      run_or_throw({"ar", "rcs", obj + "/" + fn + "_dispatch.a", obj + "/" + fn + "_dispatch.o"},
                   "archiving the dispatcher of " + fn);
      archives.push_back(obj + "/" + fn + "_dispatch.a");
      for (const auto& b : buckets)
        fs::copy_file(obj + "/" + fn + "__" + b + ".h", o.out_dir + "/" + fn + "__" + b + ".h",
                      fs::copy_options::overwrite_existing);
    } else {
      generate(*k, fn, buckets.size() == 1 ? k->name + "@" + buckets.front() : "");
    }
    fs::copy_file(obj + "/" + fn + ".h", o.out_dir + "/" + fn + ".h", fs::copy_options::overwrite_existing);
  }
  // One Halide runtime for every kernel: the baseline (last) target's, with the
  // CUDA and OpenCL modules that device probing (device.c) refers to; they load
  // their drivers only when used.
  std::string runtime_target = targets.back();
  for (const char* feature : {"-cuda", "-opencl"})
    if (("-" + runtime_target + "-").find(std::string(feature) + "-") == std::string::npos)
      runtime_target += feature;
  run_or_throw({t.generator, "-r", "halformer_runtime", "-e", "static_library", "-o", obj, "target=" + runtime_target},
               "generating the Halide runtime");
  archives.push_back(obj + "/halformer_runtime.a");
  archives.push_back(t.isa_lib);
  const std::string lib = o.out_dir + "/" + lib_name;
  fs::remove(lib);
  std::ofstream mri(obj + "/merge.mri");
  mri << "CREATE " << lib << "\n";
  for (const auto& a : archives)
    mri << "ADDLIB " << a << "\n";
  mri << "SAVE\nEND\n";
  mri.close();
  run_or_throw({"sh", "-c", "ar -M < '" + obj + "/merge.mri' && ranlib '" + lib + "'"}, "merging the archive");
  for (const auto& h : {t.kernel_header, t.runtime_header, runtime_dir + "/HalideRuntimeCuda.h",
                        runtime_dir + "/HalideRuntimeOpenCL.h"})
    fs::copy_file(h, o.out_dir + "/" + fs::path(h).filename().string(), fs::copy_options::overwrite_existing);
  std::ofstream all(o.out_dir + "/" + header_name);
  all << "/* Every kernel of this library. Generated by halformer build-lib. */\n#include \"halformer_kernels.h\"\n";
  for (const kernel_info* k : kernels)
    all << "#include \"" << prefix << k->name << ".h\"\n";
  return "wrote " + lib + " (" + std::to_string(kernels.size()) + " kernels x " + std::to_string(targets.size()) +
         " targets; schedules: " +
         (api.empty() ? std::to_string(report.tuned.size()) + " tuned for this machine, others hand defaults"
                      : "the " + api + " defaults of " + t.gpu_knob_file) +
         ")";
}

} // namespace halformer::tuner
