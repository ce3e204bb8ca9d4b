// The problems' timing facts (halformer/problems.hpp), which every benchmark and
// tuning measurement rests on: a kernel's `bytes` are the bytes of its arguments
// that are not activations (what a model's call takes from memory), and timing
// sets copy those while sharing the activations.
#include "halformer/problems.hpp"

#include <catch2/catch.hpp>

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

TEST_CASE("timing sets copy weights and caches and share the step's activations", "[problems]") {
  auto p = decode_problem("q_projection_int8");
  p.sets.push_back(p.make());
  p.add_rotation_sets();
  const auto [memory, activation] = p.set_bytes();
  CHECK(memory == 512 * 512 + 3 * 4 * 512); // the int8 weight, its steps and sums, and the bias
  CHECK(activation == 4 * 512 * 8 * 2);     // x and the output at batch 8
  REQUIRE(p.sets.size() == (64u << 20) / memory + 1);
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

  auto alone = decode_problem("softmax"); // activations alone: nothing to rotate
  alone.sets.push_back(alone.make());
  alone.add_rotation_sets();
  CHECK(alone.sets.size() == 1);
}
