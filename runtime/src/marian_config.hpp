// Hugging Face MarianMT, M2M100 / NLLB and FSMT config.json (and
// generation_config.json) as a model_config.
#pragma once

#include "halformer/config.hpp"

#include <nlohmann/json.hpp>

namespace halformer {

// `config` from `where`; `generation` (an empty object if the directory has none)
// from `generation_where`. Keys take MarianConfig's defaults where absent.
model_config parse_marian_config(const nlohmann::json& config, const std::string& where,
                                 const nlohmann::json& generation, const std::string& generation_where,
                                 std::vector<std::string>* warnings);
// model_type "m2m_100" (M2M100 and NLLB): pre-norm layers with final norms,
// fairseq's positions; keys take M2M100Config's defaults where absent.
model_config parse_m2m100_config(const nlohmann::json& config, const std::string& where,
                                 const nlohmann::json& generation, const std::string& generation_where,
                                 std::vector<std::string>* warnings);
// model_type "fsmt" (transformers' port of fairseq's transformer; what
// tools/convert_fairseq.py writes for post-norm checkpoints): post-norm layers,
// fairseq's positions, separate source and target tables.
model_config parse_fsmt_config(const nlohmann::json& config, const std::string& where,
                               const nlohmann::json& generation, const std::string& generation_where,
                               std::vector<std::string>* warnings);

} // namespace halformer
