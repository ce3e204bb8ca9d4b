// This machine's knob file (HALFORMER_KNOBS=host, build-lib --knobs host), said
// with why:
//   halformer_choose_knobs TUNED_DIR DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON KERNELS_JSON OUT_FILE
// This hardware's knob file in TUNED_DIR, as `halformer tune` wrote it, if written
// for the current schedule revisions (a schedule changed since may take other
// knobs); else DEFAULT_KNOBS with this machine's records in DB_DIR at the
// transformer-base shapes (export_knobs.hpp).
// OUT_FILE is rewritten only when its content changes (kernels rebuild then).
#include "export_knobs.hpp"
#include "halformer/error.hpp"
#include "tuner.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {
using namespace halformer::tuner;
namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// How many knob sets of a knob file came from tuned records (their "_why" says so).
int tuned_sets(const nlohmann::json& j) {
  int n = 0;
  if (j.is_object())
    for (const auto& [k, v] : j.items())
      n += k == "_why" && v.is_string() && v.get<std::string>().rfind("tuned on", 0) == 0 ? 1 : tuned_sets(v);
  return n;
}

std::string measured_on(const nlohmann::json& j) {
  return j.contains("_source") ? "measured on " + j["_source"].value("hardware", std::string("?")) : "no tuned records";
}

// Copies a chosen knob file to `out` (only if different) and says what it holds.
void use_file(const std::string& path, const std::string& why, const std::string& out) {
  if (!fs::exists(path))
    throw halformer::error("knob file " + path + " (" + why + ") does not exist");
  const std::string text = read_text(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw halformer::error("knob file " + path + " is not valid JSON: " + e.what());
  }
  if (read_text(out) != text) {
    fs::create_directories(fs::path(out).parent_path());
    std::ofstream(out) << text;
  }
  std::printf("schedules: knob file %s (%s): %d tuned knob sets, %s\n", path.c_str(), why.c_str(), tuned_sets(j),
              measured_on(j).c_str());
}
} // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s TUNED_DIR DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON KERNELS_JSON OUT_FILE\n", argv[0]);
    return 2;
  }
  const std::string tuned_dir = argv[1], defaults = argv[2], db_dir = argv[3], out = argv[6];
  try {
    const auto hw = this_machine();
    const std::string own = tuned_dir + "/" + hw.slug() + ".json";
    const auto cat = catalog::from_json_files(argv[5], argv[4]);
    if (fs::exists(own)) {
      const auto stale = stale_sections(own, cat.revisions);
      if (stale.empty())
        return use_file(own, "this hardware's tuned knob file", out), 0;
      std::printf("schedules: %s was written for other schedule revisions (%s%s): not used\n", own.c_str(),
                  stale.front().c_str(), stale.size() > 1 ? " and more" : "");
    }
    const auto r = export_catalog_knobs(defaults, database(db_dir), hw, preset("transformer-base"), out, cat);
    if (!r.retired.empty())
      std::printf("schedules: warning: this hardware's tuned records of %s were measured with earlier revisions of "
                  "their schedules (their source files have changed since), so the build runs their hand defaults; "
                  "`halformer tune` measures the current revisions\n",
                  join(r.retired, ", ").c_str());
    for (const auto& a : r.algorithms)
      std::printf("schedules: algorithm knobs %s (measured in every bucket that has records)\n", a.c_str());
    for (const auto& u : r.unplanned)
      std::printf("schedules: no knob set for the bucket of %s: it runs the section's values\n", u.c_str());
    const std::string why_not_own = (fs::exists(own) ? "stale " : "no ") + own + " for this hardware";
    std::printf("schedules: knob file %s (%s; hand defaults %s with its records in %s): %zu "
                "tuned knob sets%s\n",
                out.c_str(), why_not_own.c_str(), defaults.c_str(), db_dir.c_str(), r.tuned.size(),
                r.tuned.empty() ? " (hand defaults everywhere)" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halformer_choose_knobs: %s\n", e.what());
    return 1;
  }
}
