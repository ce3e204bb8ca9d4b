// No allocation inside the decode loop: once warmed up (one earlier decoding
// session of the same length, as a server's first request), a decode step
// allocates nothing, neither on the C++ heap (counted by replacing operator new in
// this test binary) nor kernel temporaries from the system (the kernel memory
// pool). The steps of a whole second session are counted.
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

TEST_CASE("a warmed-up decode loop allocates nothing", "[allocation]") {
  // One thread: then the pool's peak of blocks in flight is the same every
  // session (with several, it grows to the busiest interleaving seen, then stays).
  halformer::load_options one_thread;
  one_thread.threads = 1;
  halformer::Model m = halformer::Model::load(fixtures::dir("post_ln_relu"), one_thread);
  std::vector<float> logits;
  std::vector<int> tokens{1, 1};
  auto session = [&](std::size_t* heap, std::size_t* kernel) {
    m.begin({{3, 4, 5, 6}, {7, 8}});
    tokens[0] = tokens[1] = 1;
    m.decode_step(tokens, logits); // the first step sizes `logits`
    const std::size_t heap_before = news, kernel_before = halformer::kernel_memory::fresh_allocations();
    for (int step = 1; step < 200; ++step) {
      tokens[0] = 3 + step % 20, tokens[1] = 4 + step % 20;
      m.decode_step(tokens, logits);
    }
    *heap = news - heap_before;
    *kernel = halformer::kernel_memory::fresh_allocations() - kernel_before;
  };
  std::size_t heap = 0, kernel = 0;
  const std::size_t pool_before = halformer::kernel_memory::fresh_allocations();
  session(&heap, &kernel);
  // The first session fills the pool (the encoder's temporaries, at least): the
  // counter sees kernel allocations, so the zero below means none happened.
  CHECK(halformer::kernel_memory::fresh_allocations() > pool_before);
  session(&heap, &kernel);
  CHECK(heap == 0);
  CHECK(kernel == 0);
}
