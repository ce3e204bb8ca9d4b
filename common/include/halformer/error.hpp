// The one exception type of the halformer runtime: its message names the file,
// tensor, key, line or value at fault.
#pragma once

#include <stdexcept>
#include <string>

namespace halformer {
struct error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
} // namespace halformer
