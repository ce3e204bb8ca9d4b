#include "prefetch_hint.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace halformer::generators {

namespace fs = std::filesystem;

const std::map<std::string, prefetch_hint>& prefetch_hint_names() {
  static const std::map<std::string, prefetch_hint> names{
      {"nta", prefetch_hint::nta}, {"t0", prefetch_hint::t0}, {"t1", prefetch_hint::t1}, {"t2", prefetch_hint::t2}};
  return names;
}

namespace {

using bytes = std::vector<unsigned char>;

bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + p.string());
  return bytes(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const unsigned char* data, std::size_t size) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  if (!out)
    throw std::runtime_error("cannot write " + p.string());
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// objdump's disassembly with file offsets and every instruction's bytes on its line.
std::string disassembly_of(const fs::path& object) {
  const std::string command = "objdump -d -F --insn-width=15 " + shell_quoted(object.string()) + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    throw std::runtime_error("cannot run objdump (binutils) on " + object.string());
  std::string out;
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.append(buffer, n);
  if (::pclose(pipe) != 0)
    throw std::runtime_error("objdump (binutils) failed on " + object.string() + ": " + out.substr(0, 400));
  return out;
}

std::uint64_t hex(std::string_view s) { return std::stoull(std::string(s), nullptr, 16); }

// Where the function a header line opens starts, as (address, file offset):
// "0000000000000040 <name> (File Offset: 0x80):".
bool function_origin(std::string_view line, std::uint64_t& address, std::uint64_t& offset) {
  static constexpr std::string_view tag = " (File Offset: 0x";
  const auto at = line.rfind(tag);
  if (line.empty() || line.front() == ' ' || at == std::string_view::npos || !line.ends_with("):") ||
      line.find(" <") == std::string_view::npos)
    return false;
  address = hex(line.substr(0, line.find(' ')));
  offset = hex(line.substr(at + tag.size(), line.size() - 2 - at - tag.size()));
  return true;
}

// The file offset of the ModRM byte of a "  1a:\t0f 18 44 24 40 \tprefetchnta ..." line.
std::uint64_t modrm_offset(std::string_view line, std::uint64_t fn_address, std::uint64_t fn_offset) {
  const auto colon = line.find(":\t");
  const auto mnemonic = line.find("\tprefetchnta", colon + 2);
  const std::size_t first = line.find_first_not_of(' ');
  const std::uint64_t address = hex(line.substr(first, colon - first));
  std::string_view raw = line.substr(colon + 2, mnemonic - colon - 2);
  std::size_t index = 0;
  for (std::size_t i = 0; i + 1 < raw.size(); i += 3, ++index)
    if (raw.substr(i, 5) == "0f 18")
      return fn_offset + (address - fn_address) + index + 2;
  throw std::runtime_error("no 0F 18 opcode in objdump's prefetchnta line: " + std::string(line));
}

// Rewrites the prefetchnta instructions `disassembly` lists, in `data` from
// `base` (where the disassembled object starts in it).
std::size_t patch(bytes& data, std::size_t base, const std::string& disassembly, prefetch_hint hint,
                  const std::string& name) {
  std::size_t count = 0;
  std::uint64_t fn_address = 0, fn_offset = 0;
  std::string_view text = disassembly;
  for (std::size_t start = 0, end; start < text.size(); start = end + 1) {
    end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    if (function_origin(line, fn_address, fn_offset) || line.find("\tprefetchnta") == std::string_view::npos)
      continue;
    const std::size_t at = base + modrm_offset(line, fn_address, fn_offset);
    if (at >= data.size() || at < 2 || data[at - 2] != 0x0f || data[at - 1] != 0x18 || (data[at] >> 3 & 7) != 0)
      throw std::runtime_error(name + ": objdump's prefetchnta is not 0F 18 /0 in the file: " + std::string(line));
    data[at] = static_cast<unsigned char>((data[at] & ~0x38) | int(hint) << 3);
    ++count;
  }
  return count;
}

bool is_elf(const unsigned char* p, std::size_t size) {
  return size >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F';
}

// Each ELF member of a System V / GNU archive: disassembled from a copy beside
// the archive, rewritten in place in `data`.
std::size_t patch_archive(bytes& data, const fs::path& archive, prefetch_hint hint) {
  static constexpr std::string_view magic = "!<arch>\n";
  if (data.size() < magic.size() || std::string_view(reinterpret_cast<const char*>(data.data()), 8) != magic)
    throw std::runtime_error(archive.string() + " is not an ar archive");
  const fs::path copy = archive.string() + ".member.o";
  std::size_t count = 0;
  for (std::size_t header = magic.size(); header + 60 <= data.size();) {
    const std::size_t size = std::stoull(std::string(reinterpret_cast<const char*>(&data[header + 48]), 10));
    const std::size_t member = header + 60;
    if (member + size > data.size())
      throw std::runtime_error(archive.string() + ": a member runs past the end of the archive");
    if (is_elf(&data[member], size)) {
      write_file(copy, &data[member], size);
      count += patch(data, member, disassembly_of(copy), hint, archive.string());
    }
    header = member + size + (size & 1);
  }
  fs::remove(copy);
  return count;
}

// The same rewrite in GNU assembly (the generator's `assembly` output), so that
// what a reader inspects is what the objects hold.
std::size_t patch_assembly(bytes& data, prefetch_hint hint) {
  static constexpr std::string_view nta = "\tprefetchnta\t";
  std::string replacement;
  for (const auto& [name, h] : prefetch_hint_names())
    if (h == hint)
      replacement = "\tprefetch" + name + "\t";
  std::string text(data.begin(), data.end()), out;
  std::size_t count = 0, from = 0;
  for (std::size_t at; (at = text.find(nta, from)) != std::string::npos; from = at + nta.size(), ++count)
    out.append(text, from, at - from).append(replacement);
  out.append(text, from);
  data.assign(out.begin(), out.end());
  return count;
}

} // namespace

std::size_t retarget_prefetches(const fs::path& file, prefetch_hint hint) {
  if (hint == prefetch_hint::nta)
    return 0;
  bytes data = read_file(file);
  if (file.extension() == ".s") {
    const std::size_t count = patch_assembly(data, hint);
    write_file(file, data.data(), data.size());
    return count;
  }
  const std::size_t count = is_elf(data.data(), data.size()) ? patch(data, 0, disassembly_of(file), hint, file.string())
                                                             : patch_archive(data, file, hint);
  if (count > 0)
    write_file(file, data.data(), data.size());
  return count;
}

} // namespace halformer::generators
