// The DSL tests' random seed: fresh each run, reported with any failure;
// HALFORMER_TEST_SEED replays it.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

inline std::uint32_t test_seed() {
  if (const char* s = std::getenv("HALFORMER_TEST_SEED"))
    return std::uint32_t(std::stoul(s));
  return std::random_device{}();
}
