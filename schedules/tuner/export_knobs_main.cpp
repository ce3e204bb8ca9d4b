// Build step: writes the knob file the generators use (export_knobs.hpp).
//   halformer_export_knobs DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON OUT_FILE
#include "export_knobs.hpp"

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON OUT_FILE\n", argv[0]);
    return 2;
  }
  try {
    const auto hw = halformer::tuner::this_machine();
    std::ifstream spaces(argv[3]);
    const auto revisions = nlohmann::json::parse(spaces).at("_revisions").get<std::map<std::string, int>>();
    const auto r = halformer::tuner::export_knobs(argv[1], halformer::tuner::database(argv[2]), hw, "transformer-base",
                                                  argv[4], revisions);
    std::printf("schedules: %zu tuned for this machine (%s), %zu hand defaults%s\n", r.tuned.size(), hw.key().c_str(),
                r.defaulted.size(), r.tuned.empty() ? " (no tuned records for this hardware)" : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halformer_export_knobs: %s\n", e.what());
    return 1;
  }
}
