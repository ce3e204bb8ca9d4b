// Minimal, checked .npy (NumPy format 1.0/2.0) reading of integer arrays and
// writing of float32 arrays; C order only. No Debian package provides this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace halformer::npy {

struct int_array {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> data;
};

struct float_array {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

int_array read_ints(const std::string& path);  // dtype int8/16/32/64; throws halformer::error
float_array read_f32(const std::string& path); // dtype <f4
void write_f32(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& data);

} // namespace halformer::npy
