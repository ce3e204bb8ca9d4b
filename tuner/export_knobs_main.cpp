// Build step: writes the knob file the generators use (export_knobs.hpp).
//   halformer_export_knobs DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON KERNELS_JSON OUT_FILE
#include "export_knobs.hpp"
#include "tuner.hpp"

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s DEFAULT_KNOBS DB_DIR KNOB_SPACES_JSON KERNELS_JSON OUT_FILE\n", argv[0]);
    return 2;
  }
  try {
    const auto hw = halformer::tuner::this_machine();
    const auto cat = halformer::tuner::catalog::from_json_files(argv[4], argv[3]);
    const auto r = halformer::tuner::export_knobs(argv[1], halformer::tuner::database(argv[2]), hw, "transformer-base",
                                                  argv[5], cat.revisions, cat.variant_plans());
    for (const auto& u : r.unvariant)
      std::printf("schedules: no variant for the bucket of preset shape %s: it runs the nearest variant\n", u.c_str());
    std::printf("schedules: %zu tuned for this machine (%s), %zu hand defaults%s\n", r.tuned.size(), hw.key().c_str(),
                r.defaulted.size(), r.tuned.empty() ? " (no tuned records for this hardware)" : "");
    std::printf("schedules: the build's knob file is %s (hand defaults %s, tuned records from %s)\n", argv[5],
                argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halformer_export_knobs: %s\n", e.what());
    return 1;
  }
}
