// No allocation inside the decode loop: once warmed up, a decode step allocates
// nothing, neither on the C++ heap (counted by replacing operator new in this
// test binary) nor kernel temporaries from the system (the kernel memory pool).
// Steps 70..120 keep attention's key-chunk count constant (ceil(Tk/64) = 2), so
// even the span-dependent temporaries keep their size class.
#include "fixtures.hpp"
#include "kernel_memory.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::size_t> news{0};
}

void* operator new(std::size_t n) {
  ++news;
  if (void* p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("a warmed-up decode step allocates nothing", "[allocation]") {
  halformer::Model m = halformer::Model::load(fixtures::dir("post_ln_relu"));
  m.begin({{3, 4, 5, 6}, {7, 8}});
  std::vector<float> logits;
  std::vector<int> tokens{1, 1};
  for (int step = 0; step < 70; ++step) {
    m.decode_step(tokens, logits);
    tokens = {3 + step % 20, 4 + step % 20};
  }
  const std::size_t heap_before = news, kernel_before = halformer::kernel_memory::fresh_allocations();
  for (int step = 70; step <= 120; ++step) {
    tokens[0] = 3 + step % 20, tokens[1] = 4 + step % 20;
    m.decode_step(tokens, logits);
  }
  CHECK(news - heap_before == 0);
  CHECK(halformer::kernel_memory::fresh_allocations() - kernel_before == 0);
  CHECK(halformer::kernel_memory::fresh_allocations() > 0); // the pool is in use at all
}
