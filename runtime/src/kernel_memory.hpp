// The kernels' temporary memory (Halide's halide_malloc) served from a pool: a
// freed block is kept in its thread's free list of its power-of-two size class
// and handed out again, so once a decode loop has warmed up its kernels allocate
// nothing from the system (the attention span grows, which costs each thread one
// fresh block per doubling: O(threads x log max_len) in all).
#pragma once

#include <cstddef>

namespace halformer::kernel_memory {

void install();                  // idempotent; routes halide_malloc/free to the pool
std::size_t fresh_allocations(); // blocks ever taken from the system

} // namespace halformer::kernel_memory
