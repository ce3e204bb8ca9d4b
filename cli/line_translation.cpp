#include "line_translation.hpp"

#include <fmt/core.h>

#include <chrono>

namespace halformer::cli {

namespace {
// Reads up to `batch` sources (and the source-less lines among them).
struct chunk {
  std::vector<std::optional<sentence>> lines;
  std::size_t first = 0; // the first line's number
};
chunk read_chunk(std::istream& in, int batch, std::size_t& line_no, const line_source& lines) {
  chunk c{{}, line_no + 1};
  std::string line;
  int sources = 0;
  while (sources < batch && std::getline(in, line)) {
    c.lines.push_back(lines.parse(line, ++line_no));
    sources += c.lines.back().has_value();
  }
  return c;
}
} // namespace

void translate_lines(Model& model, const decode_options& o, std::istream& in, int batch, const line_source& lines,
                     bool progress) {
  const auto start = std::chrono::steady_clock::now();
  std::size_t line_no = 0, printed = 0;
  for (;;) {
    const chunk c = read_chunk(in, batch, line_no, lines);
    if (c.lines.empty())
      break;
    std::vector<sentence> sources;
    std::vector<std::size_t> line_of; // a source's index in c.lines
    decode_options chunk_options = o;
    for (std::size_t i = 0; i < c.lines.size(); ++i)
      if (c.lines[i]) {
        sources.push_back(*c.lines[i]), line_of.push_back(i);
        if (lines.prefix)
          chunk_options.target_prefix.push_back(lines.prefix(c.first + i));
      }
    std::vector<std::vector<hypothesis>> ready(c.lines.size());
    std::vector<char> is_ready(c.lines.size(), 0);
    for (std::size_t i = 0; i < c.lines.size(); ++i)
      is_ready[i] = !c.lines[i].has_value();
    std::size_t next = 0;
    const auto flush = [&] {
      for (; next < c.lines.size() && is_ready[next]; ++next, ++printed)
        lines.print(c.first + next, ready[next]);
      std::fflush(stdout);
      if (progress) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        fmt::print(stderr, "\rhalformer: {} lines translated ({:.1f} lines/s)", printed, printed / std::max(s, 1e-9));
      }
    };
    try {
      if (!sources.empty())
        model.translate(sources, chunk_options, [&](std::size_t i, const std::vector<hypothesis>& h) {
          ready[line_of[i]] = h;
          is_ready[line_of[i]] = 1;
          flush();
        });
      flush(); // lines without a source after the last source
    } catch (const error& e) {
      throw error(fmt::format("input lines {}-{}: {}", c.first, line_no, e.what()));
    }
  }
  if (progress)
    fmt::print(stderr, "\n");
}

} // namespace halformer::cli
