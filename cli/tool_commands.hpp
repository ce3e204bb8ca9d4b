// The commands that drive the build's tools (tuner/, the generator): tune,
// build-lib, compare and info. The AArch64 CLI (cmake/arm64) is built without
// them: it runs models.
#pragma once

#include "model_commands.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

namespace halformer::cli {

class tool_commands {
public:
  // Registers the commands on `app`; info describes `m`'s model directory.
  tool_commands(CLI::App& app, model_request& m);
  ~tool_commands();
  // The chosen one's exit code, or nullopt if none of these was chosen.
  std::optional<int> run_chosen();

private:
  struct state;
  std::unique_ptr<state> s_;
};

} // namespace halformer::cli
