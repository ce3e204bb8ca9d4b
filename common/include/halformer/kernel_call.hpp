// Calling a compiled kernel by argument name.
//
// A caller states what it passes (name, kind, element type, rank) in its own
// order; binding matches that against the kernel's *_metadata() once and keeps
// the permutation, so a call only reorders pointers into the *_argv array (no
// allocation, no string compare). Every mismatch is an error at binding, naming
// the kernel and the argument: a missing or unknown name, an input passed as an
// output, another element type or rank.
#pragma once

#include "halformer/dsl/halide_type.hpp"
#include "halformer/error.hpp"
#include "halformer_kernels.h"

#include <array>
#include <string>
#include <vector>

namespace halformer {

enum class arg_kind { scalar, input, output };

// One argument as the caller passes it.
struct arg_spec {
  std::string name;
  arg_kind kind;
  halide_type_t type;
  int dims = 0; // 0 for scalars
};
inline arg_spec scalar_arg(std::string name, halide_type_t t) { return {std::move(name), arg_kind::scalar, t, 0}; }
inline arg_spec input_arg(std::string name, halide_type_t t, int dims) {
  return {std::move(name), arg_kind::input, t, dims};
}
inline arg_spec output_arg(std::string name, halide_type_t t, int dims) {
  return {std::move(name), arg_kind::output, t, dims};
}
inline constexpr halide_type_t f32_type = dsl::halide_type_of(dsl::dtype::f32);
inline constexpr halide_type_t i32_type = dsl::halide_type_of(dsl::dtype::i32);
inline constexpr halide_type_t i8_type = dsl::halide_type_of(dsl::dtype::i8);
inline constexpr halide_type_t bf16_type = dsl::halide_type_of(dsl::dtype::bf16);
inline constexpr halide_type_t f16_type = dsl::halide_type_of(dsl::dtype::f16);
inline constexpr halide_type_t bool_type = dsl::halide_type_of(dsl::dtype::boolean);

// The kernel `name` of a library's list (halformer_kernels_cpu() ...).
inline const halformer_kernel& find_kernel(const halformer_kernel* list, const std::string& name) {
  const halformer_kernel* k = halformer_find_kernel(list, name.c_str());
  if (!k)
    throw error(halformer_last_error());
  return *k;
}

class kernel_call {
public:
  static constexpr std::size_t max_args = 32;

  kernel_call() = default;
  kernel_call(const halformer_kernel& k, const std::vector<arg_spec>& provided) : argv_(k.argv), name_(k.name) {
    const halide_filter_metadata_t* md = k.metadata();
    if (md->num_arguments > int(max_args))
      throw error("kernel " + name_ + " has " + std::to_string(md->num_arguments) + " arguments; at most " +
                  std::to_string(max_args) + " are supported");
    for (std::size_t j = 0; j < provided.size(); ++j)
      for (std::size_t k = 0; k < j; ++k)
        if (provided[j].name == provided[k].name)
          throw error("kernel " + name_ + ": argument '" + provided[j].name + "' is given twice");
    std::vector<bool> used(provided.size(), false);
    for (int i = 0; i < md->num_arguments; ++i) {
      const halide_filter_argument_t& a = md->arguments[i];
      if (a.kind == halide_argument_kind_input_scalar && std::string(a.name) == "__user_context")
        throw error("kernel " + name_ + " takes a user context, which callers do not pass");
      std::size_t j = 0;
      while (j < provided.size() && provided[j].name != a.name)
        ++j;
      if (j == provided.size())
        throw error("kernel " + name_ + ": its argument '" + a.name + "' is not given" + given(provided));
      check(a, provided[j]);
      used[j] = true;
      from_[std::size_t(i)] = int(j);
    }
    for (std::size_t j = 0; j < provided.size(); ++j)
      if (!used[j])
        throw error("kernel " + name_ + " has no argument '" + provided[j].name + "'" + expected(md));
    count_ = std::size_t(md->num_arguments);
    provided_ = provided.size();
  }

  // args[j]: the caller's j-th argument: a halide_buffer_t*, or a scalar's address.
  int operator()(void* const* args) const {
    std::array<void*, max_args> a;
    for (std::size_t i = 0; i < count_; ++i)
      a[i] = args[from_[i]];
    return argv_(a.data());
  }
  std::size_t arity() const { return provided_; }
  const std::string& name() const { return name_; }

private:
  void check(const halide_filter_argument_t& a, const arg_spec& p) const {
    const bool scalar = a.kind == halide_argument_kind_input_scalar;
    const bool output = a.kind == halide_argument_kind_output_buffer;
    const arg_kind kind = scalar ? arg_kind::scalar : output ? arg_kind::output : arg_kind::input;
    const std::string what = "kernel " + name_ + ", argument '" + p.name + "': ";
    if (kind != p.kind)
      throw error(what + "it is " + kind_name(kind) + ", given as " + kind_name(p.kind));
    if (a.type.code != p.type.code || a.type.bits != p.type.bits)
      throw error(what + "its elements are " + type_name(a.type) + ", given " + type_name(p.type));
    if (!scalar && a.dimensions != p.dims)
      throw error(what + "it has " + std::to_string(a.dimensions) + " dimensions, given " + std::to_string(p.dims));
  }
  static std::string kind_name(arg_kind k) {
    return k == arg_kind::scalar ? "a scalar" : k == arg_kind::input ? "an input buffer" : "an output buffer";
  }
  static std::string type_name(halide_type_t t) {
    const char* code = t.code == halide_type_float ? "float" : t.code == halide_type_int ? "int" : "uint";
    return std::string(code) + std::to_string(t.bits);
  }
  static std::string given(const std::vector<arg_spec>& p) {
    std::string s = " (given:";
    for (const auto& a : p)
      s += " " + a.name;
    return s + ")";
  }
  static std::string expected(const halide_filter_metadata_t* md) {
    std::string s = " (its arguments:";
    for (int i = 0; i < md->num_arguments; ++i)
      s += std::string(" ") + md->arguments[i].name;
    return s + ")";
  }

  int (*argv_)(void**) = nullptr;
  std::string name_;
  std::array<int, max_args> from_{};
  std::size_t count_ = 0, provided_ = 0;
};

} // namespace halformer
