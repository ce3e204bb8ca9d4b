// The GEMM compute types: what a GEMM kernel's weights are and how it computes
// x . W + bias, so that each weight-heavy kernel (kernels_gemm.hpp) and each
// layer step running one (gemm_steps.hpp) is written once for all of them.
// - float32: float32 weights in panels, the bias fused into the sums (linear);
// - int8: int8 weights in panels with one float32 step per output ("<w>_step")
//   and the int32 sum of each output's values ("<w>_sums"), inputs quantized
//   per row, exact int32 sums, dequantized (quantized_linear);
// - bfloat16: bfloat16 weights in panels, inputs rounded, float32 sums
//   (bf16_linear); CPU kernels only.
// A new compute type is one more struct of this shape and its kernels' entries
// in kernels.hpp's registry.
#pragma once

#include "halformer/dsl/bfloat16.hpp"
#include "halformer/dsl/quantize.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace halformer::dsl {

// A string literal as a template argument: kernel names are joined from a
// base and the compute type's suffix at compile time.
template <std::size_t N> struct fixed_string {
  char chars[N]{};
  constexpr fixed_string(const char (&s)[N]) { std::copy_n(s, N, chars); }
  constexpr std::size_t size() const { return N - 1; }
};
template <fixed_string Base, fixed_string Suffix> struct joined_name {
  static constexpr auto chars = [] {
    std::array<char, Base.size() + Suffix.size()> a{};
    std::copy_n(Base.chars, Base.size(), a.begin());
    std::copy_n(Suffix.chars, Suffix.size(), a.begin() + Base.size());
    return a;
  }();
  static constexpr std::string_view value{chars.data(), chars.size()};
};

namespace compute {

// Each type has:
// - suffix: its kernels' and schedules' names are the float32 ones' plus it;
// - cpu_only: its kernels are left out of the GPU libraries;
// - weight_type: the element type of its weight panels;
// - aux(w, outputs): the leaves a weight `w` carries besides its values (int8's
//   float32 step and int32 sum per output, "<w>_step" and "<w>_sums"), a
//   hana::tuple, empty for the others; their names are "<w>_<what>";
// - prepared(name, x): x made ready once for several GEMMs of one kernel (the
//   q, k and v projections), as stage <name>_<what> where it is one;
// - linear(name, x, w, aux, bias, out): y = x . W + bias in this type.

struct float32 {
  static constexpr fixed_string suffix = "";
  static constexpr bool cpu_only = false;
  static constexpr auto weight_type = f32;
  template <class S> static auto aux(const std::string&, S) { return hana::make_tuple(); }
  template <Tensor X> static X prepared(const std::string&, X x) { return x; }
  template <class X, Tensor W, class Aux, Tensor Bias, class Out>
  static auto linear(std::string name, X x, W w, Aux, Bias bias, Out out) {
    return dsl::linear(std::move(name), std::move(x), std::move(w), std::move(bias), out);
  }
};

struct int8 {
  static constexpr fixed_string suffix = "_int8";
  static constexpr bool cpu_only = false;
  static constexpr auto weight_type = i8;
  template <class S> static auto aux(const std::string& w, S outputs) {
    return hana::make_tuple(input(w + "_step", outputs), input(w + "_sums", outputs, i32));
  }
  // Quantized per row, a row being every dimension but x's dim 0 (the features).
  template <Tensor X> static auto prepared(const std::string& name, X x) {
    return quantize_rows(name + "_quantized", std::move(x), decltype(hana::drop_front(shape_t<X>{})){});
  }
  template <class X, Tensor W, class Aux, Tensor Bias, class Out>
  static auto linear(std::string name, X x, W w, Aux aux, Bias bias, Out out) {
    auto weight = make_int8_weight(std::move(w), hana::at_c<0>(aux), hana::at_c<1>(aux));
    return quantized_linear(std::move(name), std::move(x), std::move(weight), std::move(bias), out);
  }
};

struct bfloat16 {
  static constexpr fixed_string suffix = "_bf16";
  static constexpr bool cpu_only = true; // no GPU bfloat16 schedules
  static constexpr auto weight_type = bf16;
  template <class S> static auto aux(const std::string&, S) { return hana::make_tuple(); }
  template <Tensor X> static auto prepared(const std::string& name, X x) {
    return to_bfloat16(name + "_bf16", std::move(x));
  }
  template <class X, Tensor W, class Aux, Tensor Bias, class Out>
  static auto linear(std::string name, X x, W w, Aux, Bias bias, Out out) {
    return bf16_linear(std::move(name), std::move(x), std::move(w), std::move(bias), out);
  }
};

} // namespace compute

// A kernel's (or schedule's) name in compute type C: the float32 name plus C's suffix.
template <fixed_string Base, class C> inline constexpr std::string_view name_in = joined_name<Base, C::suffix>::value;

} // namespace halformer::dsl
