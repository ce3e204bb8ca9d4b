// Helpers of the kernel problems (problems.hpp): random inputs, shape keys, the
// error measure, row sampling, and binding a problem's arguments by name.
#include "halformer/problems.hpp"
#include "halformer/dsl/panels.hpp"
#include "halformer/reference/bfloat16.hpp"
#include "halformer/timing.hpp"

#include "halformer/weight_layout.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace halformer::problems {

std::mt19937 rng;

namespace {
fb fill_random(fb b, float scale) {
  std::normal_distribution<float> n(0.0f, scale);
  b.for_each_value([&](float& v) { v = n(rng); });
  return b;
}
} // namespace

fb random(std::vector<int> shape, float scale) { return fill_random(fb(shape), scale); }
i8b random_int8_weight(std::vector<int> shape) {
  i8b b(shape);
  std::uniform_int_distribution<int> v(-127, 127);
  b.for_each_value([&](int8_t& x) { x = int8_t(v(rng)); });
  return b;
}

bf16b random_bf16_panels(const std::vector<int>& dims, int inputs, float scale) {
  return bf16_panels(random(dims, scale).data(), dims, inputs);
}
ref::tensor bf16_panels_to_ref(const bf16b& packed, const std::vector<int>& dims, int inputs) {
  return ref::dot_weight_to_ref(dsl::panels::unpack<bf16b>(packed, dims, inputs), inputs,
                                [](uint16_t v) { return double(ref::bf16_value(v)); });
}

fb random_panels(const std::vector<int>& dims, int inputs, float scale) {
  return dsl::panels::pack<fb>(random(dims, scale), inputs);
}
ref::tensor panels_to_ref(const fb& packed, const std::vector<int>& dims, int inputs) {
  return ref::dot_weight_to_ref(dsl::panels::unpack<fb>(packed, dims, inputs), inputs);
}

int shape_args::operator[](const std::string& k) {
  auto it = v.find(k);
  if (it == v.end())
    throw std::runtime_error("shape lacks '" + k + "'");
  used.push_back(k);
  return it->second;
}
int shape_args::get(const std::string& k, int otherwise) { return v.count(k) ? (*this)[k] : otherwise; }
void shape_args::check_all_used() const {
  for (const auto& [k, x] : v)
    if (std::find(used.begin(), used.end(), k) == used.end())
      throw std::runtime_error("shape key '" + k + "' does not apply to this kernel");
}

double error_meter::result() const {
  const double rms = std::sqrt(ss / double(std::max<std::size_t>(n, 1)));
  double w = 0;
  for (auto [g, r] : pairs)
    w = std::max(w, std::isfinite(g) ? std::abs(g - r) / (std::abs(r) + rms + 1e-30) : INFINITY);
  return w;
}

ref::tensor row3(const fb& x, int t, int b) { return ref::to_ref(x.cropped(1, t, 1).cropped(2, b, 1)); }
void compare_row3(const fb& got, const ref::tensor& want, int t, int b, error_meter& m) {
  for (int i = 0; i < got.dim(0).extent(); ++i)
    m.add(got(i, t, b), want.data[std::size_t(i)]);
}
void compare_heads(const fb& got, const ref::tensor& want, int t, int b, error_meter& m) {
  const int DK = got.dim(0).extent(), H = got.dim(2).extent();
  for (int h = 0; h < H; ++h)
    for (int j = 0; j < DK; ++j)
      m.add(got(j, t, h, b), want.data[std::size_t(h * DK + j)]);
}
namespace {
bool every_row = false;
}
void verify_every_row(bool all) { every_row = all; }

std::vector<std::pair<int, int>> sample_rows(int T, int B) {
  if (every_row) {
    std::vector<std::pair<int, int>> all;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        all.emplace_back(t, b);
    return all;
  }
  std::vector<std::pair<int, int>> s{{0, 0}, {T - 1, B - 1}};
  std::uniform_int_distribution<int> tt(0, T - 1), bb(0, B - 1);
  for (int k = 0; k < 4; ++k)
    s.emplace_back(tt(rng), bb(rng));
  return s;
}

// The caller's order: f buffers, i buffers, i8 buffers, bf16 buffers, f16 buffers, scalars (see operator()).
void problem::bind(const halformer_kernel& k) {
  const call_set c = make();
  std::vector<halformer::arg_spec> specs;
  auto buffer = [&](const std::string& n, halide_type_t t, int dims) {
    const bool out = std::find(outputs.begin(), outputs.end(), n) != outputs.end();
    specs.push_back(out ? halformer::output_arg(n, t, dims) : halformer::input_arg(n, t, dims));
  };
  for (std::size_t j = 0; j < f_names.size(); ++j)
    buffer(f_names[j], halformer::f32_type, c.f.at(j).dimensions());
  for (std::size_t j = 0; j < i_names.size(); ++j)
    buffer(i_names[j], halformer::i32_type, c.i.at(j).dimensions());
  for (std::size_t j = 0; j < i8_names.size(); ++j)
    buffer(i8_names[j], halformer::i8_type, c.i8.at(j).dimensions());
  for (std::size_t j = 0; j < bf16_names.size(); ++j)
    buffer(bf16_names[j], halformer::bf16_type, c.bf16.at(j).dimensions());
  for (std::size_t j = 0; j < f16_names.size(); ++j)
    buffer(f16_names[j], halformer::f16_type, c.f16.at(j).dimensions());
  for (const auto& s : scalars)
    specs.push_back(halformer::scalar_arg(s.name, s.type));
  call = halformer::kernel_call(k, specs);
}

int problem::operator()(call_set& c) {
  std::array<void*, halformer::kernel_call::max_args> args;
  std::size_t n = 0;
  c.for_each_buffer([&](auto& b) { args[n++] = b.raw_buffer(); });
  for (auto& s : scalars)
    args[n++] = &s.value;
  return call(args.data());
}

bool problem::is_activation(const std::string& name) const {
  return std::find(activations.begin(), activations.end(), name) != activations.end();
}

bool problem::is_argument(const std::string& name) const {
  for (const auto* list : {&f_names, &i_names, &i8_names, &bf16_names, &f16_names})
    if (std::find(list->begin(), list->end(), name) != list->end())
      return true;
  return false;
}

namespace {
// fn(member, names) for each typed buffer list of a call set (&call_set::f, ...)
// and the problem's names for it.
template <class F> void for_each_list(const problem& p, F&& fn) {
  fn(&call_set::f, p.f_names);
  fn(&call_set::i, p.i_names);
  fn(&call_set::i8, p.i8_names);
  fn(&call_set::bf16, p.bf16_names);
  fn(&call_set::f16, p.f16_names);
}
// A buffer's elements' bytes (a padded row's padding, which no kernel reads, not counted).
template <class B> std::size_t element_bytes(const B& b) { return b.number_of_elements() * b.type().bytes(); }
} // namespace

std::pair<std::size_t, std::size_t> problem::set_bytes() const {
  std::size_t memory = 0, activation = 0;
  for_each_list(*this, [&](auto list, const std::vector<std::string>& names) {
    for (std::size_t j = 0; j < (sets.at(0).*list).size(); ++j)
      (is_activation(names.at(j)) ? activation : memory) += element_bytes((sets[0].*list)[j]);
  });
  return {memory, activation};
}

void problem::add_rotation_sets() {
  const auto [memory, activation] = set_bytes();
  const std::size_t wanted = memory == 0 ? 1 : timing::rotation_bytes() / memory + 1;
  while (sets.size() < std::min<std::size_t>(wanted, 4096)) {
    // Copies of sets[0]'s values (what they are does not matter to a timing, only
    // where: copying is ~100x faster than drawing random ones, which matters on
    // a 260 MiB L3 whose rotation takes 520 MiB in every tuning child).
    call_set fresh = sets[0]; // handles to the same memory
    for_each_list(*this, [&](auto list, const std::vector<std::string>& names) {
      for (std::size_t j = 0; j < (fresh.*list).size(); ++j)
        if (!is_activation(names.at(j))) {
          auto& b = (fresh.*list)[j];
          const halide_type_t type = b.type(); // float16 and bfloat16 live in uint16 buffers
          b = b.copy();
          b.raw_buffer()->type = type;
        }
    });
    sets.push_back(std::move(fresh));
  }
}

shape_args parse_shape(const std::string& text) {
  shape_args shape;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string kv = text.substr(at, end - at);
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw std::runtime_error("shape item '" + kv + "' is not name=value");
    shape.v[kv.substr(0, eq)] = std::stoi(kv.substr(eq + 1));
    at = end + 1;
  }
  return shape;
}

} // namespace halformer::problems
