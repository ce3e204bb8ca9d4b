// Build step: halformer_dispatcher DIR FUNCTION KERNEL BUCKET... (dispatcher.hpp).
#include "dispatcher.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s DIR FUNCTION KERNEL BUCKET BUCKET...\n", argv[0]);
    return 2;
  }
  try {
    halformer::tuner::write_dispatcher(argv[1], argv[2], argv[3], {argv + 4, argv + argc});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halformer_dispatcher: %s\n", e.what());
    return 1;
  }
}
