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

#include <cstring>
#include <string>
#include <type_traits>

namespace test {
template <class T> struct is_buffer : std::false_type {};
template <class T, int D, int S> struct is_buffer<Halide::Runtime::Buffer<T, D, S>> : std::true_type {};

// What the device wrapper found wrong with a call that the kernel itself passed.
inline std::string& wrapper_error() {
  thread_local std::string message;
  return message;
}

// After the call, every input buffer's device copy is read back and compared
// with its host data: a kernel that writes its inputs (or out of bounds into a
// neighbouring allocation) fails the call with a message, although on a GPU such
// damage would otherwise go unseen by tests that read only the outputs.
template <auto Kernel, auto Metadata> struct on_device {
  template <class... A> int operator()(A&&... a) const {
    auto arg = [](auto&& x) -> decltype(auto) {
      if constexpr (is_buffer<std::remove_cvref_t<decltype(x)>>::value) {
        const_cast<std::remove_cvref_t<decltype(x)>&>(x).set_host_dirty(); // the host copy is current
        return const_cast<std::remove_cvref_t<decltype(x)>&>(x).raw_buffer();
      } else {
        return x;
      }
    };
    int rc = Kernel(arg(a)...);
    const halide_filter_metadata_t* md = Metadata();
    int index = 0;
    auto back = [&](auto&& x) {
      const int kind = md->arguments[index++].kind;
      if constexpr (is_buffer<std::remove_cvref_t<decltype(x)>>::value) {
        auto& b = const_cast<std::remove_cvref_t<decltype(x)>&>(x);
        if (!b.raw_buffer()->device)
          return;
        if (rc == 0 && kind == halide_argument_kind_input_buffer) {
          auto seen = b.copy(); // host copy of the same shape
          seen.raw_buffer()->set_host_dirty(false);
          b.raw_buffer()->set_device_dirty(true); // so that the copy reads the device's data
          const int copied = halide_buffer_copy(nullptr, b.raw_buffer(), nullptr, seen.raw_buffer());
          b.raw_buffer()->set_device_dirty(false);
          if (copied == 0) {
            bool same = true;
            b.for_each_element(
                [&](const int* pos) { same = same && std::memcmp(&b(pos), &seen(pos), sizeof(b(pos))) == 0; });
            if (!same) {
              wrapper_error() =
                  std::string("the kernel changed its input '") + md->arguments[index - 1].name + "' on the device";
              rc = -1000;
            }
          }
        }
        b.copy_to_host();
        b.device_free();
      }
    };
    (back(a), ...);
    return rc;
  }
};
} // namespace test
#define HF(name) (::test::on_device<&hf_opencl_##name, &hf_opencl_##name##_metadata>{})
#else
#define HF(name) hf_##name
#endif

#include "halformer_kernels.h"

#include <string>

namespace test {
#ifndef HALFORMER_TEST_OPENCL
inline std::string& wrapper_error() {
  thread_local std::string message; // stays empty: the CPU kernels are called as they are
  return message;
}
#endif
// The message of the last failed call: the wrapper's, else the kernel library's.
inline std::string last_error() { return wrapper_error().empty() ? halformer_last_error() : wrapper_error(); }
inline void clear_error() {
  wrapper_error().clear();
  halformer_clear_error();
}
} // namespace test
