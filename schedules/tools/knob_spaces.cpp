// Prints every schedule's knob declarations as JSON, {section: [{name, allowed,
// meaning, algorithm, phase}]} for the CPU schedules and the same under "gpu" for the GPU ones, with
// "_revisions" beside each: the tuner's search spaces, straight from the code.
#include "halformer/schedules/kernels.hpp"

#include <iostream>

int main() {
  using namespace halformer::schedules;
  auto describe = [](family f) {
    nlohmann::json j;
    for (const auto& [section, info] : sections(f)) {
      j["_revisions"][section] = info.revision;
      for (const auto& d : info.knobs)
        j[section].push_back({{"name", d.name},
                              {"allowed", d.allowed},
                              {"meaning", d.meaning},
                              {"algorithm", d.algorithm},
                              {"phase", halformer::phase_name(d.phase)}});
    }
    return j;
  };
  nlohmann::json j = describe(family::cpu);
  j["gpu"] = describe(family::gpu);
  std::cout << j.dump(1) << "\n";
}
