// Every kernel the library holds, found by its name: each has a problem
// (halformer/problems.hpp: arguments by name, random inputs, the float64
// reference) and test shapes in every shape bucket, and at each shape every output
// row matches the reference. A kernel added to the DSL and the library without a
// problem fails here, before any benchmark or tuner could measure it.
#include "halformer/dsl/kernels.hpp"
#include "halformer/problems.hpp"
#include "halformer/shape_buckets.hpp"
#include "support.hpp"

#include <set>

namespace problems = halformer::problems;

namespace {
const halformer_kernel* library_kernels() {
#ifdef HALFORMER_TEST_OPENCL
  return halformer_kernels_opencl();
#else
  return halformer_kernels_cpu();
#endif
}

// The host data is current: a GPU library copies it to the device on the call.
void host_is_current(problems::call_set& c) {
  c.for_each_buffer([](auto& b) { b.set_host_dirty(); });
}

// After a call on a GPU library, results are on the device: bring them back.
void to_host(problems::call_set& c) {
  auto back = [](auto& b) {
    if (b.raw_buffer()->device) {
      b.copy_to_host();
      b.device_free();
    }
  };
  c.for_each_buffer(back);
}

} // namespace

TEST_CASE("every library kernel matches its reference at its test shapes, bound by name", "[registry]") {
  problems::rng.seed(test::rng()()); // replayed by HALFORMER_TEST_SEED
  problems::verify_every_row(true);
  int kernels = 0;
  for (const halformer_kernel* k = library_kernels(); k->name; ++k, ++kernels) {
    const auto& shapes = problems::test_shapes(k->name);
    INFO("kernel " << k->name);
    REQUIRE(!shapes.empty()); // a kernel needs a problem with test shapes (common/src/kernel_problems.cpp)
    std::set<std::string> buckets;
    for (const auto& text : shapes) {
      INFO("shape " << text);
      auto shape = problems::parse_shape(text);
      buckets.insert(halformer::bucket_of(shape.v.at("t"), shape.v.at("batch")));
      auto p = problems::make_problem(k->name, shape);
      p.bind(*k); // names, kinds, types and ranks against the compiled metadata
      auto c = p.make();
      host_is_current(c);
      REQUIRE_OK(p(c));
      to_host(c);
      problems::error_meter m;
      p.verify(c, m);
      CHECK(m.result() <= p.tolerance);
    }
    CHECK(buckets == std::set<std::string>(halformer::bucket_names().begin(), halformer::bucket_names().end()));
  }
  int expected = int(problems::problem_kernels().size());
#ifdef HALFORMER_TEST_OPENCL // the bfloat16 and float16 kernels are CPU-only (cmake/HalformerKernels.cmake)
  for (const auto& name : problems::problem_kernels())
    expected -= halformer::dsl::kernels::cpu_only(name) ? 1 : 0;
#endif
  CHECK(kernels == expected);
  problems::verify_every_row(false);
}
