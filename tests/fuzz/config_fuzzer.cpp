// libFuzzer target: any bytes as config.json: parse or throw halformer::error.
#include "halformer/config.hpp"
#include "halformer/error.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> warnings;
  try {
    (void)halformer::model_config::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz", &warnings);
  } catch (const halformer::error&) {
  }
  return 0;
}
