// halformer.generators: Halide's generator driver (generate_filter_main, the
// GenGen command line), then the prefetch hint of the x86 objects it wrote
// (prefetch_hint.hpp). Every consumer of the kernels runs this executable, so
// the CMake kernel libraries, `halformer build-lib` and the tuner's candidates
// all get the same code.
#include "prefetch_hint.hpp"

#include <Halide.h>

#include <iostream>
#include <map>
#include <sstream>
#include <vector>

namespace {

namespace fs = std::filesystem;
using halformer::generators::prefetch_hint;

// What a GenGen command line asks for: its flags (each takes a value) and its
// name=value parameters.
struct command_line {
  std::map<std::string, std::string> flags, params;
};

command_line parse(int argc, char** argv) {
  command_line c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("-") && i + 1 < argc)
      c.flags[a] = argv[++i];
    else if (const auto eq = a.find('='); eq != std::string::npos)
      c.params[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return c;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string p; std::getline(in, p, sep);)
    parts.push_back(p);
  return parts;
}

// GenGen's file base name: -n, else -f without its namespaces, else -g.
std::string file_base_name(const command_line& c) {
  if (auto n = c.flags.find("-n"); n != c.flags.end())
    return n->second;
  if (auto f = c.flags.find("-f"); f != c.flags.end()) {
    const auto colons = f->second.rfind("::");
    return colons == std::string::npos ? f->second : f->second.substr(colons + 2);
  }
  return c.flags.at("-g");
}

// The code GenGen wrote: <base>.a (static_library), and <base>.o or one
// <base>-<target>.o per target (object), likewise .s (assembly).
std::vector<fs::path> compiled_outputs(const command_line& c) {
  const fs::path dir = c.flags.at("-o");
  const std::string base = file_base_name(c);
  const auto e = c.flags.find("-e");
  std::vector<fs::path> out;
  for (const auto& emit : split(e == c.flags.end() ? "static_library" : e->second, ',')) {
    if (emit == "static_library")
      out.push_back(dir / (base + ".a"));
    if (emit != "object" && emit != "assembly")
      continue;
    const std::string ext = emit == "object" ? ".o" : ".s";
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name == base + ext || (name.starts_with(base + "-") && name.ends_with(ext)))
        out.push_back(entry.path());
    }
  }
  return out;
}

bool is_x86(const command_line& c) {
  const auto t = c.params.find("target");
  if (t == c.params.end())
    return Halide::get_host_target().arch == Halide::Target::X86;
  for (const auto& target : split(t->second, ','))
    if (Halide::Target(target).arch != Halide::Target::X86)
      return false;
  return true;
}

prefetch_hint hint_of(const command_line& c) {
  const auto p = c.params.find("prefetch_hint");
  if (p == c.params.end())
    return halformer::generators::default_prefetch_hint;
  return halformer::generators::prefetch_hint_names().at(p->second); // the generator validated it
}

} // namespace

int main(int argc, char** argv) {
  try {
    if (const int status = Halide::Internal::generate_filter_main(argc, argv); status != 0)
      return status;
    const command_line c = parse(argc, argv);
    if (c.flags.contains("-r") || !c.flags.contains("-o") || !is_x86(c))
      return 0;
    for (const auto& file : compiled_outputs(c))
      if (fs::exists(file))
        halformer::generators::retarget_prefetches(file, hint_of(c));
  } catch (const std::exception& e) {
    std::cerr << "halformer.generators: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
