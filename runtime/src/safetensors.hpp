// A checked reader of the safetensors format: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then raw data.
// The file is mapped once; every offset, size and shape is validated (with
// overflow checks) before any byte of data is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace halformer {

struct tensor_info {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::size_t begin = 0, end = 0; // byte offsets into the data section
};

class safetensors_file {
public:
  explicit safetensors_file(const std::string& path); // throws halformer::error
  safetensors_file(const safetensors_file&) = delete;
  safetensors_file& operator=(const safetensors_file&) = delete;
  safetensors_file(safetensors_file&&) noexcept;
  ~safetensors_file();

  // Parses a whole file held in memory (used by the fuzzer).
  static safetensors_file from_memory(const std::uint8_t* data, std::size_t size, std::string name);

  const std::map<std::string, tensor_info>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  // The F32 tensor `name`, checked to have exactly `shape`, copied into `out`
  // (any alignment; `out`'s memory is reused where it holds enough).
  void read_f32(const std::string& name, const std::vector<std::int64_t>& shape, std::vector<float>& out) const;
  const std::string& path() const { return path_; }

private:
  safetensors_file() = default;
  void parse();
  std::string path_;
  const std::uint8_t* base_ = nullptr; // the whole file
  std::size_t size_ = 0;
  std::size_t data_start_ = 0;
  void* mapping_ = nullptr;
  std::map<std::string, tensor_info> tensors_;
};

} // namespace halformer
