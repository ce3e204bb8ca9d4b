// The kernels under test. HF(name) is the CPU library's hf_<name>, or, in the
// OpenCL test binary (HALFORMER_TEST_OPENCL), hf_opencl_<name> wrapped so that a
// call behaves like the CPU one: the buffers' host data goes to the device, and
// afterwards every buffer comes back to the host and its device copy is freed
// (each call independent, as the tests expect). The runtime keeps data on the
// device instead; tests/runtime checks that path.
#pragma once

#ifdef HALFORMER_TEST_OPENCL
#include "hf_all_opencl.h"

#include <HalideBuffer.h>

#include <type_traits>

namespace test {
template <class T> struct is_buffer : std::false_type {};
template <class T, int D, int S> struct is_buffer<Halide::Runtime::Buffer<T, D, S>> : std::true_type {};

template <auto Kernel> struct on_device {
  template <class... A> int operator()(A&&... a) const {
    auto arg = [](auto&& x) -> decltype(auto) {
      if constexpr (is_buffer<std::remove_cvref_t<decltype(x)>>::value) {
        const_cast<std::remove_cvref_t<decltype(x)>&>(x).set_host_dirty(); // the host copy is current
        return const_cast<std::remove_cvref_t<decltype(x)>&>(x).raw_buffer();
      } else {
        return x;
      }
    };
    const int rc = Kernel(arg(a)...);
    auto back = [](auto&& x) {
      if constexpr (is_buffer<std::remove_cvref_t<decltype(x)>>::value) {
        auto& b = const_cast<std::remove_cvref_t<decltype(x)>&>(x);
        if (b.raw_buffer()->device) {
          b.copy_to_host();
          b.device_free();
        }
      }
    };
    (back(a), ...);
    return rc;
  }
};
} // namespace test
#define HF(name) (::test::on_device<&hf_opencl_##name>{})
#else
#define HF(name) hf_##name
#endif
