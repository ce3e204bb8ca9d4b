// What the tuner knows of the build: where its tools are (tuner_paths.json),
// which kernels exist and their knob spaces (kernels.json, knob_spaces.json, and
// each kernel's schedule from the DSL), and the knob-set helpers every command shares.
#include "tuner.hpp"

#include "halformer/targets.hpp"

#include "halformer/bucket_knobs.hpp"
#include "halformer/dsl/kernels.hpp"
#include "halformer/error.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace halformer::tuner {

using json = nlohmann::json;

namespace {
json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw error("cannot open " + path);
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    throw error(path + " is not valid JSON: " + e.what());
  }
}
} // namespace

toolchain toolchain::from_json_file(const std::string& path) {
  const json j = read_json(path);
  toolchain t;
  t.generator = j.at("generator"), t.cxx = j.at("cxx"), t.harness_dir = j.at("harness_dir");
  t.runtime_lib = j.at("runtime_lib"), t.knob_file = j.at("knob_file"), t.work_dir = j.at("work_dir");
  t.isa_lib = j.at("isa_lib"), t.kernel_header = j.at("kernel_header"), t.runtime_header = j.at("runtime_header");
  t.autoscheduler_dir = j.at("autoscheduler_dir"), t.blas_harness = j.at("blas_harness");
  t.gpu_knob_file = j.at("gpu_knob_file"), t.arm64_knob_file = j.at("arm64_knob_file");
  t.build_knob_file = j.at("build_knob_file"), t.source_dir = j.at("source_dir"), t.cmake = j.at("cmake");
  t.make_program = j.at("make_program"), t.halide_dir = j.at("halide_dir");
  t.knob_choice = j.at("knob_choice").get<std::vector<std::string>>();
  return t;
}

const kernel_info& catalog::kernel(const std::string& name) const {
  for (const auto& k : kernels)
    if (k.name == name)
      return k;
  std::string known;
  for (const auto& k : kernels)
    known += " " + k.name;
  throw error("unknown kernel '" + name + "'; kernels:" + known);
}

std::map<std::string, bucket_plan> catalog::bucket_plans() const {
  std::map<std::string, bucket_plan> plans;
  for (const auto& k : kernels)
    if (!k.buckets.empty())
      plans[k.name] = {k.knob_section, k.buckets};
  return plans;
}

catalog catalog::from_json_files(const std::string& kernels_json, const std::string& spaces_json) {
  catalog c;
  const json kernels = read_json(kernels_json), spaces = read_json(spaces_json);
  // Every kernel is the one generator with kernel=<name>; its schedule is the DSL's.
  for (const auto& k : kernels) {
    const std::string name = k.at("name");
    c.kernels.push_back({name,
                         "kernel",
                         std::string(dsl::kernels::interface_of(name).schedule),
                         {"kernel=" + name},
                         1,
                         k.value("buckets", std::vector<std::string>{}),
                         k.value("dot_products", false)});
  }
  // The CPU schedules' spaces at the top level, the GPU schedules' under "gpu".
  auto read_spaces = [&c](const json& j, std::map<std::string, knob_space>& out, std::map<std::string, int>& revs,
                          bool cpu) {
    if (j.contains("_revisions"))
      revs = j["_revisions"].get<std::map<std::string, int>>();
    for (const auto& [section, knobs] : j.items())
      if (section[0] != '_' && section != "gpu")
        for (const auto& k : knobs) {
          out[section].emplace_back(k.at("name"), k.at("allowed").get<std::vector<int>>());
          if (cpu && k.value("algorithm", false))
            c.algorithm_knobs[section].insert(k.at("name").get<std::string>());
          if (cpu)
            c.knob_phases[section][k.at("name")] = phase_named(k.value("phase", "any"));
        }
  };
  read_spaces(spaces, c.spaces, c.revisions, true);
  if (spaces.contains("gpu"))
    read_spaces(spaces["gpu"], c.gpu_spaces, c.gpu_revisions, false);
  for (auto& k : c.kernels)
    if (auto r = c.revisions.find(k.knob_section); r != c.revisions.end())
      k.revision = r->second;
  return c;
}

std::string target_of_isa(const std::string& isa) {
  for (const auto& [name, target] : targets::x86)
    if (isa == name)
      return target;
  if (isa == "opencl")
    return targets::opencl[0];
  if (isa == "cuda")
    throw error("tuning CUDA schedules needs a CUDA device to measure on; halformer measures x86 ISAs and opencl");
  throw error("unknown ISA '" + isa + "' (avx512, avx2, sse41 or opencl)");
}

bool is_gpu(const std::string& isa) { return isa == "opencl" || isa == "cuda"; }

bool measured_with_current_schedule(const catalog& c, const record& r) {
  const auto among = [&](const auto& targets) { return std::ranges::find(targets, r.target) != std::end(targets); };
  const bool gpu = among(targets::opencl) || among(targets::cuda);
  const auto& revisions = gpu ? c.gpu_revisions : c.revisions;
  const auto it = revisions.find(r.knob_section);
  return r.schedule_revision == (it == revisions.end() ? 1 : it->second); // as export_knobs counts a missing one
}

std::string measured_target(const kernel_info& k, const tune_options& o) {
  return target_of_isa(k.dot_products && !o.dot_product_isa.empty() ? o.dot_product_isa : o.isa);
}

kernel_info kernel_for(const catalog& c, const std::string& name, const std::string& isa) {
  kernel_info k = c.kernel(name);
  if (is_gpu(isa)) {
    const auto r = c.gpu_revisions.find(k.knob_section);
    if (r == c.gpu_revisions.end())
      throw error("no GPU schedule revision for " + k.knob_section + " (knob_spaces.json)");
    k.revision = r->second;
  }
  return k;
}

const knob_space& space_for(const catalog& c, const kernel_info& k, const std::string& isa) {
  const auto& spaces = is_gpu(isa) ? c.gpu_spaces : c.spaces;
  const auto s = spaces.find(k.knob_section);
  if (s == spaces.end())
    throw error("no knob space for " + k.knob_section + (is_gpu(isa) ? " (GPU)" : ""));
  return s->second;
}

knob_space space_at(const catalog& c, const kernel_info& k, const std::string& isa, const std::string& shape) {
  knob_space at;
  const std::string bucket = bucket_of(shape);
  for (const auto& [name, values] : space_for(c, k, isa))
    if (is_gpu(isa) || phase_covers(phase_of(c.knob_phases, k.knob_section, name), bucket))
      at.emplace_back(name, values);
  return at;
}

knob_set restricted_to(const knob_set& knobs, const knob_space& space) {
  knob_set kept;
  for (const auto& [name, values] : space)
    if (const auto v = knobs.find(name); v != knobs.end())
      kept.insert(*v);
  return kept;
}

knob_set default_knobs(const toolchain& t, const std::string& section, const std::string& isa) {
  const std::string& file = is_gpu(isa) ? t.gpu_knob_file : t.knob_file;
  return section_knobs(read_json(file), file, section, isa);
}

knob_set hand_knobs_at(const toolchain& t, const kernel_info& k, const std::string& shape, const std::string& isa) {
  if (is_gpu(isa))
    return default_knobs(t, k.knob_section, isa); // GPU schedules have one knob set
  return bucket_knobs(read_json(t.knob_file), t.knob_file, k.knob_section, k.name, bucket_of(shape), isa);
}

std::string generator_knobs(const knob_set& k) { // "a:1/b:2": GenGen forbids '=' and ',' in values
  std::string s;
  for (const auto& [n, v] : k)
    if (n[0] != '_')
      s += (s.empty() ? "" : "/") + n + ":" + std::to_string(v);
  return s;
}

const std::vector<std::string> autoschedulers{"Adams2019", "Mullapudi2016", "Li2018"};

std::string autoscheduler_of(const knob_set& k) {
  for (const auto& [n, v] : k)
    if (n.rfind("_autoscheduler:", 0) == 0)
      return n.substr(15);
  return "";
}

bool tuned_candidate(const record& r, const std::string& kernel, const std::string& shape, const std::string& target,
                     const std::string& hardware, int revision) {
  return r.kernel == kernel && r.shape == shape && r.target == target && r.hardware == hardware &&
         r.schedule_revision == revision && autoscheduler_of(r.knobs).empty();
}

std::string estimates_of(const std::string& shape) {
  auto m = shape_values(shape);
  if (m.count("d_k") && m.count("heads"))
    m["d_model"] = m["d_k"] * m["heads"];
  if (m.count("n"))
    m["tk"] = m["n"], m.erase("n");
  if (!m.count("tk") && m.count("t"))
    m["tk"] = m["t"];
  m.erase("causal"), m.erase("step"); // attention's scalars, not dimensions
  std::string out;
  for (const auto& [k, v] : m)
    out += (out.empty() ? "" : "/") + k + ":" + std::to_string(v);
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string s;
  for (const auto& x : items)
    s += (s.empty() ? "" : separator) + x;
  return s;
}

std::string knobs_text(const knob_set& k) {
  std::string s;
  for (const auto& [n, v] : k)
    s += (s.empty() ? "" : ",") + n + "=" + std::to_string(v);
  return s;
}

built_candidate::built_candidate(built_candidate&& o) noexcept
    : r(std::move(o.r)), dir(std::move(o.dir)), exe(std::move(o.exe)) {
  o.dir.clear(), o.exe.clear();
}

// The knob sections of a knob file written for other schedule revisions than `revisions`.
std::vector<std::string> stale_sections(const std::string& path, const std::map<std::string, int>& revisions) {
  std::map<std::string, int> written;
  try {
    std::ifstream in(path);
    const auto j = nlohmann::json::parse(in);
    if (j.contains("_source") && j["_source"].contains("revisions"))
      written = j["_source"]["revisions"].get<std::map<std::string, int>>();
  } catch (const std::exception&) { // not JSON: its reader says so
    return {};
  }
  std::vector<std::string> stale;
  for (const auto& [section, revision] : revisions)
    if (!written.count(section) || written.at(section) != revision)
      stale.push_back(section);
  return stale;
}

} // namespace halformer::tuner
