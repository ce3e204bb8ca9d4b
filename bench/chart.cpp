// bench/run.py's charts, drawn by the one chart writer (halformer/chart.hpp):
//   halformer_chart SPEC.json OUT.svg
// SPEC: {"title", "unit", "series": [names], "groups": [{"label", "values": [number or null per series]}]}
#include "halformer/chart.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SPEC.json OUT.svg\n", argv[0]);
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    const auto spec = nlohmann::json::parse(in);
    std::vector<halformer::chart::group> groups;
    for (const auto& g : spec.at("groups")) {
      halformer::chart::group out{g.at("label"), {}};
      for (const auto& v : g.at("values"))
        out.bars.push_back(v.is_number() && v.get<double>() > 0 ? halformer::chart::bar{v.get<double>()}
                                                                : halformer::chart::bar{});
      groups.push_back(std::move(out));
    }
    halformer::chart::write_bars(argv[2], spec.at("title"), spec.at("series"), spec.at("unit"), groups);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halformer_chart: %s\n", e.what());
    return 1;
  }
}
