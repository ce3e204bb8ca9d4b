// The loop `run` and `translate` share: lines in, results out in input order.
#pragma once

#include "halformer/model.hpp"

#include <functional>
#include <istream>
#include <optional>

namespace halformer::cli {

struct line_source {
  // Line `number` (1-based) -> a source, or nullopt for a line with no source (an
  // empty line of text: its result is printed empty, the model never sees it).
  std::function<std::optional<sentence>(const std::string& line, std::size_t number)> parse;
  // Prints line `number`'s hypotheses (empty for a line without a source).
  std::function<void(std::size_t number, const std::vector<hypothesis>&)> print;
  // Optional: line `number`'s target prefix (decode_options::target_prefix).
  std::function<sentence(std::size_t number)> prefix;
};

// Translates `in`'s lines `batch` sources at a time; each result is printed as soon
// as it and every line before it are done. With `progress`, a line on stderr
// counts the lines done. Errors name the lines of the batch.
void translate_lines(Model& model, const decode_options& o, std::istream& in, int batch, const line_source& lines,
                     bool progress);

} // namespace halformer::cli
