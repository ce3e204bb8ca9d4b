// The problems' timing facts (halformer/problems.hpp), which every benchmark and
// tuning measurement rests on: a kernel's `bytes` are the bytes of its arguments
// that are not activations (what a model's call takes from memory), and timing
// sets copy those while sharing the activations.
#include "halformer/problems.hpp"
#include "halformer/timing.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

namespace problems = halformer::problems;

namespace {
// Transformer-base decode shapes at batch 8: the first a kernel's problem takes.
problems::problem decode_problem(const std::string& kernel) {
  for (const char* shape : {"d_k=64,heads=8,t=1,batch=8", "d_k=64,heads=8,tk=128,causal=1,t=1,batch=8",
                            "d_model=512,d_ff=2048,t=1,batch=8", "d_model=512,vocab=32000,t=1,batch=8",
                            "d_model=512,t=1,batch=8", "n=128,t=1,batch=8", "vocab=32000,t=1,batch=8"}) {
    auto args = problems::parse_shape(shape);
    try {
      return problems::make_problem(kernel, args);
    } catch (const std::runtime_error&) { // a dimension the kernel lacks or does not take
    }
  }
  FAIL("no decode shape fits " << kernel);
  return {};
}

// The largest cache sysfs lists for cpu0 (0 where it lists none).
std::size_t sysfs_largest_cache() {
  std::size_t most = 0;
  for (int index = 0; index < 16; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string size; // "32768K"
    if (in >> size)
      most = std::max(most, std::size_t(std::stoull(size)) << (size.back() == 'M' ? 20 : size.back() == 'K' ? 10 : 0));
  }
  return most;
}
} // namespace

TEST_CASE("a problem's bytes are its non-activation arguments' bytes", "[problems]") {
  for (const auto& kernel : problems::problem_kernels()) {
    if (kernel.starts_with("embedding")) // a gather reads the rows it looks up, not its whole table
      continue;
    INFO("kernel " << kernel);
    auto p = decode_problem(kernel);
    CHECK(!p.activations.empty());
    p.sets.push_back(p.make());
    CHECK(p.bytes == double(p.set_bytes().first));
  }
}

TEST_CASE("timing reads through twice the last-level cache, at least 64 MiB", "[problems]") {
  const std::size_t llc = sysfs_largest_cache();
  if (llc == 0)
    WARN("sysfs lists no cache here: only the 64 MiB floor is checked");
  else
    CHECK(halformer::machine::last_level_cache_bytes() >= llc);
  INFO("last-level cache " << (llc >> 20) << " MiB (sysfs)");
  CHECK(halformer::timing::rotation_bytes() >= std::max(std::size_t(64) << 20, 2 * llc));
}

TEST_CASE("timing sets copy weights and caches and share the step's activations", "[problems]") {
  auto p = decode_problem("q_projection_int8");
  p.sets.push_back(p.make());
  p.add_rotation_sets();
  const auto [memory, activation] = p.set_bytes();
  CHECK(memory == 512 * 512 + 3 * 4 * 512); // the int8 weight, its steps and sums, and the bias
  CHECK(activation == 4 * 512 * 8 * 2);     // x and the output at batch 8
  REQUIRE(p.sets.size() == halformer::timing::rotation_bytes() / memory + 1);
  for (std::size_t k = 1; k < p.sets.size(); ++k) {
    CHECK(p.sets[k].f[0].data() == p.sets[0].f[0].data());         // x
    CHECK(p.sets[k].f.back().data() == p.sets[0].f.back().data()); // the output
    CHECK(p.sets[k].i8[0].data() != p.sets[0].i8[0].data());       // the weight
  }

  auto cache = decode_problem("attention");
  cache.sets.push_back(cache.make());
  cache.add_rotation_sets();
  REQUIRE(cache.sets.size() > 1);
  CHECK(cache.sets[1].f[0].data() == cache.sets[0].f[0].data()); // q
  CHECK(cache.sets[1].f[1].data() != cache.sets[0].f[1].data()); // the keys: a cache

  auto half = decode_problem("attention_f16kv"); // float16 in uint16 buffers: the copies keep the type
  half.sets.push_back(half.make());
  half.add_rotation_sets();
  REQUIRE(half.sets.size() > 1);
  REQUIRE(!half.sets[1].f16.empty());
  CHECK(half.sets[1].f16[0].type() == halformer::f16_type);
  CHECK(half.sets[1].f16[0].data() != half.sets[0].f16[0].data());

  auto alone = decode_problem("softmax"); // activations alone: nothing to rotate
  alone.sets.push_back(alone.make());
  alone.add_rotation_sets();
  CHECK(alone.sets.size() == 1);
}
