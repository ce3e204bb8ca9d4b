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

int_array read_ints(const std::string& path); // dtype <i8, <i4 (or |i1 ... ); throws halformer::error
void write_f32(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& data);

} // namespace halformer::npy
