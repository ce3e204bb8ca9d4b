// libFuzzer target: any bytes as a safetensors file; reading every tensor must
// either succeed or throw halformer::error, never crash or read out of bounds.
#include "halformer/error.hpp"
#include "safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto f = halformer::safetensors_file::from_memory(data, size, "fuzz");
    std::vector<float> values;
    for (const auto& [name, info] : f.tensors()) {
      try {
        f.read_f32(name, info.shape, values);
      } catch (const halformer::error&) {
      }
    }
  } catch (const halformer::error&) {
  }
  return 0;
}
