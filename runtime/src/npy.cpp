#include "halformer/npy.hpp"

#include "halformer/error.hpp"

#include <cstring>
#include <fstream>
#include <regex>

namespace halformer::npy {

namespace {
struct raw {
  char kind;
  int width;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

raw read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw error("cannot open '" + path + "'");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string where = "'" + path + "'";
  if (all.size() < 10 || all.compare(0, 6, "\x93NUMPY") != 0)
    throw error(where + " is not a .npy file");
  const int major = static_cast<unsigned char>(all[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(all[8]) | (static_cast<unsigned char>(all[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (all.size() < 12)
      throw error(where + " is truncated");
    for (int i = 3; i >= 0; --i)
      header_len = (header_len << 8) | static_cast<unsigned char>(all[8 + i]);
    start = 12;
  } else {
    throw error(where + ": unsupported .npy version " + std::to_string(major));
  }
  if (header_len > all.size() - start)
    throw error(where + " is truncated (header)");
  const std::string header = all.substr(start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([<>|=]?)([iuf])(\\d+)'")))
    throw error(where + ": no dtype in header");
  const char kind = m[2].str()[0];
  const int width = std::stoi(m[3].str());
  if (m[1].str() == ">")
    throw error(where + ": big-endian data is not supported");
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw error(where + ": unsupported element width");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw error(where + ": Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw error(where + ": no shape in header");
  raw a{kind, width, {}, {}};
  std::string dims = m[1].str();
  std::regex num("\\d+");
  std::size_t count = 1;
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    const std::int64_t d = std::stoll(it->str());
    if (d > (1ll << 31))
      throw error(where + ": dimension too large");
    a.shape.push_back(d);
    count *= std::size_t(d);
    if (count > (1ull << 32))
      throw error(where + ": array too large");
  }
  const std::size_t data_start = start + header_len;
  if (all.size() - data_start != count * std::size_t(width))
    throw error(where + ": holds " + std::to_string(all.size() - data_start) + " data bytes, the shape needs " +
                std::to_string(count * std::size_t(width)));
  a.bytes = all.substr(data_start);
  return a;
}
} // namespace

int_array read_ints(const std::string& path) {
  raw r = read_raw(path);
  if (r.kind != 'i')
    throw error("'" + path + "': expected an integer array (int8/16/32/64)");
  int_array a{r.shape, {}};
  const std::size_t count = r.bytes.size() / std::size_t(r.width);
  const int width = r.width;
  a.data.resize(count);
  const char* p = r.bytes.data();
  for (std::size_t i = 0; i < count; ++i) {
    std::int64_t v = 0;
    switch (width) {
    case 1: {
      std::int8_t x;
      std::memcpy(&x, p + i, 1);
      v = x;
      break;
    }
    case 2: {
      std::int16_t x;
      std::memcpy(&x, p + 2 * i, 2);
      v = x;
      break;
    }
    case 4: {
      std::int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      v = x;
      break;
    }
    default:
      std::memcpy(&v, p + 8 * i, 8);
    }
    a.data[i] = v;
  }
  return a;
}

float_array read_f32(const std::string& path) {
  raw r = read_raw(path);
  if (r.kind != 'f' || r.width != 4)
    throw error("'" + path + "': expected a float32 array");
  float_array a{r.shape, std::vector<float>(r.bytes.size() / 4)};
  std::memcpy(a.data.data(), r.bytes.data(), r.bytes.size());
  return a;
}

void write_f32(const std::string& path, const std::vector<std::int64_t>& shape, const std::vector<float>& data) {
  std::string dims;
  for (auto d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw error("cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.put(char(len & 0xff)).put(char(len >> 8));
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(float)));
  if (!out)
    throw error("failed writing '" + path + "'");
}

} // namespace halformer::npy
