// A Hugging Face MarianMT config.json (and generation_config.json) as a model_config.
#pragma once

#include "halformer/config.hpp"

#include <nlohmann/json.hpp>

namespace halformer {

// `config` from `where`; `generation` (an empty object if the directory has none)
// from `generation_where`. Keys take MarianConfig's defaults where absent.
model_config parse_marian_config(const nlohmann::json& config, const std::string& where,
                                 const nlohmann::json& generation, const std::string& generation_where,
                                 std::vector<std::string>* warnings);

} // namespace halformer
