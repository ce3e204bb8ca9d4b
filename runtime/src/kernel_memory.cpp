#include "kernel_memory.hpp"

#include <HalideRuntime.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex> // std::call_once
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

// Free lists per thread: a parallel kernel's tasks allocate their per-task
// stages (sized by the call, e.g. a decode step's attention span) on every
// worker, hundreds of times per call; one shared list behind a mutex made the
// workers queue on it (a decode step's attention ran slower on two threads than
// on one). Halide frees a task's memory on the thread that allocated it; a
// block freed elsewhere joins that thread's lists, which is as good.
struct free_lists {
  std::array<std::vector<void*>, classes> by_class;
  free_lists() {
    for (auto& l : by_class)
      l.reserve(64);
  }
  ~free_lists() { // the thread ends: its blocks go back to the system
    for (auto& l : by_class)
      for (void* block : l)
        std::free(block);
  }
};
thread_local free_lists free_blocks;
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
  if (auto& list = free_blocks.by_class[c]; !list.empty()) {
    void* block = list.back();
    list.pop_back();
    return static_cast<char*>(block) + sizeof(header);
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
  auto& list = free_blocks.by_class[c];
  if (list.capacity() == list.size())
    list.reserve(list.size() * 2 + 8);
  list.push_back(block);
}
} // namespace

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    halide_set_custom_malloc(pool_malloc);
    halide_set_custom_free(pool_free);
  });
}

std::size_t fresh_allocations() { return fresh; }

} // namespace halformer::kernel_memory
