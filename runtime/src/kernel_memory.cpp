#include "kernel_memory.hpp"

#include <HalideRuntime.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace halformer::kernel_memory {

namespace {
constexpr std::size_t alignment = 128; // >= halide_malloc_alignment() on x86
constexpr int classes = 48;

struct header { // sits in front of every block handed to Halide
  int size_class;
  int pad[alignment / sizeof(int) - 1];
};
static_assert(sizeof(header) == alignment);

std::mutex lock;
std::array<std::vector<void*>, classes> free_blocks;
std::atomic<std::size_t> fresh{0};

int class_of(std::size_t bytes) {
  int c = 6; // 64 bytes minimum
  while ((std::size_t(1) << c) < bytes)
    ++c;
  return c;
}

void* pool_malloc(void*, std::size_t bytes) {
  const int c = class_of(bytes + sizeof(header));
  if (c >= classes)
    return nullptr;
  {
    std::lock_guard<std::mutex> g(lock);
    auto& list = free_blocks[c];
    if (!list.empty()) {
      void* block = list.back();
      list.pop_back();
      return static_cast<char*>(block) + sizeof(header);
    }
  }
  void* block = std::aligned_alloc(alignment, std::size_t(1) << c);
  if (!block)
    return nullptr;
  static_cast<header*>(block)->size_class = c;
  ++fresh;
  return static_cast<char*>(block) + sizeof(header);
}

void pool_free(void*, void* p) {
  if (!p)
    return;
  void* block = static_cast<char*>(p) - sizeof(header);
  const int c = static_cast<header*>(block)->size_class;
  std::lock_guard<std::mutex> g(lock);
  auto& list = free_blocks[c];
  if (list.capacity() == list.size())
    list.reserve(list.size() * 2 + 8);
  list.push_back(block);
}
} // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto& l : free_blocks)
      l.reserve(64);
    halide_set_custom_malloc(pool_malloc);
    halide_set_custom_free(pool_free);
  });
}

std::size_t fresh_allocations() { return fresh; }

} // namespace halformer::kernel_memory
