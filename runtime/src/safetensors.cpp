#include "safetensors.hpp"

#include "halformer/error.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace halformer {

namespace {
constexpr std::size_t max_header = 100u << 20; // 100 MiB of JSON is no model header

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}
} // namespace

safetensors_file::safetensors_file(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    throw error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw error("cannot stat '" + path + "'");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    mapping_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      ::close(fd);
      throw error("cannot map '" + path + "'");
    }
    base_ = static_cast<const std::uint8_t*>(mapping_);
  }
  ::close(fd);
  try {
    parse();
  } catch (...) {
    if (mapping_)
      ::munmap(mapping_, size_);
    mapping_ = nullptr;
    throw;
  }
}

safetensors_file::safetensors_file(safetensors_file&& o) noexcept
    : path_(std::move(o.path_)), base_(o.base_), size_(o.size_), data_start_(o.data_start_), mapping_(o.mapping_),
      tensors_(std::move(o.tensors_)) {
  o.mapping_ = nullptr;
  o.base_ = nullptr;
}

safetensors_file::~safetensors_file() {
  if (mapping_)
    ::munmap(mapping_, size_);
}

safetensors_file safetensors_file::from_memory(const std::uint8_t* data, std::size_t size, std::string name) {
  safetensors_file f;
  f.path_ = std::move(name);
  f.base_ = data;
  f.size_ = size;
  f.parse();
  return f;
}

namespace {
// One tensor's header entry, checked against the data's `data_size` bytes; `t`
// names it in errors.
tensor_info tensor_of(const nlohmann::json& entry, const std::string& t, std::size_t data_size) {
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
    throw error(t + ": needs dtype, shape and data_offsets");
  tensor_info info;
  if (!entry["dtype"].is_string())
    throw error(t + ": dtype is not a string");
  info.dtype = entry["dtype"].get<std::string>();
  const auto& shape = entry["shape"];
  if (!shape.is_array() || shape.size() > 8)
    throw error(t + ": shape is not an array of at most 8 sizes");
  std::uint64_t elements = 1;
  for (const auto& e : shape) {
    if (!e.is_number_unsigned() && !(e.is_number_integer() && e.get<std::int64_t>() >= 0))
      throw error(t + ": shape holds a non-integer or negative size");
    const std::uint64_t d = e.get<std::uint64_t>();
    if (d != 0 && elements > (std::uint64_t(1) << 62) / d)
      throw error(t + ": shape overflows");
    elements *= d;
    info.shape.push_back(static_cast<std::int64_t>(d));
  }
  const auto& off = entry["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    throw error(t + ": data_offsets is not [begin, end]");
  const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
  if (b > e || e > data_size)
    throw error(t + ": data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] fall outside the " +
                std::to_string(data_size) + " data bytes (file truncated or corrupt)");
  const std::uint64_t width = info.dtype == "F32" || info.dtype == "I32"    ? 4
                              : info.dtype == "F16" || info.dtype == "BF16" ? 2
                              : info.dtype == "F64" || info.dtype == "I64"  ? 8
                                                                            : 0;
  if (width != 0 && elements * width != e - b)
    throw error(t + ": " + std::to_string(e - b) + " data bytes for shape " + shape_text(info.shape) + " of " +
                info.dtype);
  info.begin = static_cast<std::size_t>(b);
  info.end = static_cast<std::size_t>(e);
  return info;
}
} // namespace

void safetensors_file::parse() {
  const std::string where = "safetensors file '" + path_ + "'";
  if (size_ < 8)
    throw error(where + " is truncated: " + std::to_string(size_) + " bytes, no header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | base_[i];
  if (n > max_header || n > size_ - 8)
    throw error(where + " is corrupt or truncated: header length " + std::to_string(n) + " exceeds the file (" +
                std::to_string(size_) + " bytes)");
  data_start_ = 8 + static_cast<std::size_t>(n);
  const std::size_t data_size = size_ - data_start_;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(base_ + 8, base_ + data_start_);
  } catch (const std::exception& e) {
    throw error(where + " has an invalid JSON header: " + e.what());
  }
  if (!header.is_object())
    throw error(where + ": the header is not a JSON object");
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__")
      continue;
    tensors_.emplace(name, tensor_of(entry, where + ", tensor '" + name + "'", data_size));
  }
}

void safetensors_file::read_f32(const std::string& name, const std::vector<std::int64_t>& shape,
                                std::vector<float>& out) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw error("model is missing tensor '" + name + "' (" + path_ + ")");
  const tensor_info& info = it->second;
  if (info.dtype != "F32")
    throw error("tensor '" + name + "' has dtype " + info.dtype + "; only F32 is supported");
  if (info.shape != shape)
    throw error("tensor '" + name + "' has shape " + shape_text(info.shape) + ", expected " + shape_text(shape));
  out.resize((info.end - info.begin) / 4);
  const std::uint8_t* src = base_ + data_start_ + info.begin;
  std::memcpy(out.data(), src, info.end - info.begin);
  // Each tensor is read once (then repacked): drop its pages from this process so
  // the file's pages and the repacked weights are not resident together (halves
  // the peak RSS of loading). Whole pages inside the tensor only; read-only file
  // pages are simply re-read if touched again.
  if (mapping_) {
    const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    const auto first = (std::uintptr_t(src) + page - 1) / page * page;
    const auto last = (std::uintptr_t(src) + (info.end - info.begin)) / page * page;
    if (last > first)
      madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }
}

} // namespace halformer
