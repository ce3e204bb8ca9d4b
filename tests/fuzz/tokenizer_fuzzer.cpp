// libFuzzer target: any bytes as a tokenizer directory's vocab.json,
// tokenizer_config.json and config.json (NUL-separated, in that order; a part
// left out is a file left out), beside real SentencePiece models (the directory
// HALFORMER_FUZZ_SPM names: source.spm, target.spm, and source.spm again as
// sentencepiece.bpe.model, which NLLB's and M2M100's tokenizer_class read; the
// seeds name each family): the tokenizer loads or
// throws halformer::error, and a loaded one encodes text and decodes any ids
// (those of the vocabulary, past it and negative) without crashing.
#include "halformer/error.hpp"
#include "halformer/tokenizer.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {
fs::path directory;

void write_or_remove(const fs::path& path, const std::string* text) {
  if (!text) {
    fs::remove(path);
    return;
  }
  std::ofstream(path, std::ios::binary) << *text;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* spm = std::getenv("HALFORMER_FUZZ_SPM");
  if (!spm) {
    std::fprintf(stderr, "set HALFORMER_FUZZ_SPM to a directory with source.spm and target.spm\n");
    std::exit(2);
  }
  directory = fs::temp_directory_path() / ("halformer_tokenizer_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(directory);
  for (const char* name : {"source.spm", "target.spm"})
    fs::copy_file(fs::path(spm) / name, directory / name, fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(spm) / "source.spm", directory / "sentencepiece.bpe.model",
                fs::copy_options::overwrite_existing);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < size; ++i)
    if (data[i] == 0 && parts.size() < 3)
      parts.emplace_back();
    else
      parts.back() += char(data[i]);
  const char* names[] = {"vocab.json", "tokenizer_config.json", "config.json"};
  for (std::size_t i = 0; i < 3; ++i)
    write_or_remove(directory / names[i], i < parts.size() ? &parts[i] : nullptr);
  try {
    const halformer::Tokenizer t = halformer::Tokenizer::load(directory.string());
    (void)t.encode(">>de<< Hello, world: </s> <unk> <pad> __fr__ fra_Latn \xc3\xa9t\xc3\xa9.");
    if (t.multilingual()) {
      for (const char* code : {"fr", "__en__", "eng_Latn", ""})
        try {
          (void)t.encode("a b", code);
          (void)t.language_id(code);
        } catch (const halformer::error&) {
        }
    }
    std::vector<int> ids{-2, -1};
    for (int id = 0; id < 64; ++id)
      ids.push_back(id);
    for (std::size_t i = 0; i + 4 <= size && ids.size() < 96; i += 4) // ids the input spells, any int32
      ids.push_back(int(std::uint32_t(data[i]) | std::uint32_t(data[i + 1]) << 8 | std::uint32_t(data[i + 2]) << 16 |
                        std::uint32_t(data[i + 3]) << 24));
    (void)t.decode(ids);
    (void)t.pieces_of(ids);
  } catch (const halformer::error&) {
  }
  return 0;
}
