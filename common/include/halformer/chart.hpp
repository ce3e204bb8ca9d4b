// The one chart writer: horizontal grouped bars as SVG, with optional min-max
// whiskers. `halformer compare` draws its reports with it, and bench/run.py
// through bin/halformer_chart (bench/chart.cpp).
#pragma once

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace halformer::chart {

struct bar {
  std::optional<double> value, lo, hi; // lo/hi: a whisker (e.g. min-max of the samples)
  std::string note;                    // shown instead of a bar without a value
};
struct group {
  std::string label;
  std::vector<bar> bars; // one per series
};

inline std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Bars scaled to the largest value (or whisker end) across the chart.
inline void write_bars(const std::string& path, const std::string& title, const std::vector<std::string>& series,
                       const std::string& unit, const std::vector<group>& groups) {
  static const char* colors[] = {"#2a7", "#47a", "#c73", "#888"};
  double most = 1e-9;
  for (const auto& g : groups)
    for (const auto& b : g.bars)
      most = std::max({most, b.value.value_or(0.0), b.hi.value_or(0.0)});
  const int bar_h = 16, gap = 10, left = 210, width = 460;
  const int height = 50 + int(groups.size() * (series.size() * bar_h + gap) + 20 * series.size());
  std::ostringstream out;
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << left + width + 140 << "' height='" << height
      << "' font-family='sans-serif' font-size='11'>\n<text x='10' y='20' font-size='14'>" << title << "</text>\n";
  int y = 40;
  for (const auto& g : groups) {
    out << "<text x='10' y='" << y + bar_h * int(series.size()) / 2 + 4 << "'>" << g.label << "</text>\n";
    for (std::size_t i = 0; i < series.size(); ++i) {
      const bar b = i < g.bars.size() ? g.bars[i] : bar{};
      if (b.value) {
        const double w = width * *b.value / most;
        out << "<rect x='" << left << "' y='" << y << "' width='" << w << "' height='" << bar_h - 2 << "' fill='"
            << colors[i % 4] << "'/>\n";
        double text_x = left + w + 4;
        if (b.lo && b.hi) {
          const double lo = left + width * *b.lo / most, hi = left + width * *b.hi / most;
          out << "<line x1='" << lo << "' x2='" << hi << "' y1='" << y + bar_h / 2 << "' y2='" << y + bar_h / 2
              << "' stroke='black'/>\n";
          text_x = std::max(text_x, hi + 4);
        }
        out << "<text x='" << text_x << "' y='" << y + bar_h - 4 << "'>" << number(*b.value) << "</text>\n";
      } else {
        out << "<text x='" << left + 4 << "' y='" << y + bar_h - 4 << "' fill='#a33'>"
            << (b.note.empty() ? series[i] + ": n/a" : b.note.substr(0, 80)) << "</text>\n";
      }
      y += bar_h;
    }
    y += gap;
  }
  for (std::size_t i = 0; i < series.size(); ++i)
    out << "<rect x='" << left << "' y='" << y + 20 * int(i) << "' width='12' height='12' fill='" << colors[i % 4]
        << "'/><text x='" << left + 18 << "' y='" << y + 20 * int(i) + 10 << "'>" << series[i] << " (" << unit
        << ")</text>\n";
  out << "</svg>\n";
  std::ofstream(path) << out.str();
}

} // namespace halformer::chart
