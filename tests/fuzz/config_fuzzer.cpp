// libFuzzer target: any bytes as config.json, in halformer's format and as a
// MarianMT config (and generation config): parse or throw halformer::error.
#include "halformer/config.hpp"
#include "halformer/error.hpp"
#include "marian_config.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> warnings;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)halformer::model_config::parse(text, "fuzz", &warnings);
  } catch (const halformer::error&) {
  }
  const auto json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_object()) {
    for (const auto& generation : {nlohmann::json::object(), json})
      try {
        (void)halformer::parse_marian_config(json, "fuzz", generation, "fuzz generation", &warnings);
      } catch (const halformer::error&) {
      }
  }
  return 0;
}
