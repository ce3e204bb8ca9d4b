#include "halformer/onednn_matmul.hpp"

#include "halformer/timing.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace halformer::onednn {

namespace {
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

struct types {
  dt src, wei, dst;
};
types types_of(matmul_type t) {
  switch (t) {
  case matmul_type::u8s8:
    return {dt::u8, dt::s8, dt::s32};
  case matmul_type::bf16:
    return {dt::bf16, dt::bf16, dt::f32};
  default:
    return {dt::f32, dt::f32, dt::f32};
  }
}

// Random bytes of a plain tensor's type: values a model could hold (small
// integers for int8, normal floats, or their bfloat16 upper halves).
void fill(dnnl::memory& m, dt type, std::mt19937& rng) {
  const std::size_t bytes = m.get_desc().get_size();
  auto* p = static_cast<std::uint8_t*>(m.get_data_handle());
  std::normal_distribution<float> d;
  if (type == dt::f32 || type == dt::bf16) {
    for (std::size_t i = 0; i < bytes; i += dnnl::memory::data_type_size(type)) {
      const float x = d(rng);
      std::uint32_t u;
      std::memcpy(&u, &x, 4);
      if (type == dt::bf16)
        u >>= 16;
      std::memcpy(p + i, &u, dnnl::memory::data_type_size(type));
    }
  } else {
    std::uniform_int_distribution<int> b(type == dt::u8 ? 0 : -127, 127);
    for (std::size_t i = 0; i < bytes; ++i)
      p[i] = std::uint8_t(b(rng));
  }
}

struct gemm_primitive {
  dnnl::matmul prim;
  dnnl::memory src, dst;
  std::vector<dnnl::memory> weights;          // one per rotation copy, in the primitive's layout
  std::unordered_map<int, dnnl::memory> args; // src, dst and the fused work's operands (bias, residual)
  std::string impl;
};
} // namespace

struct matmul_set::state {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::vector<gemm_primitive> gemms;
  std::size_t next = 0, copies = 1;
  double flops = 0;
};

namespace {
dnnl::algorithm eltwise_of(gemm_epilogue::activation a) {
  using act = gemm_epilogue::activation;
  return a == act::relu   ? dnnl::algorithm::eltwise_relu
         : a == act::gelu ? dnnl::algorithm::eltwise_gelu_erf
                          : dnnl::algorithm::eltwise_swish;
}

// The kernel's epilogue as oneDNN attributes; `operands` gets the binary
// post-ops' tensors (described, made by the caller) under their argument ids.
dnnl::primitive_attr fused_attr(const matmul_dims& g, types t,
                                std::vector<std::pair<int, dnnl::memory::desc>>& operands) {
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  int index = 0;
  const auto binary = [&](dnnl::algorithm a, const dnnl::memory::desc& d) {
    po.append_binary(a, d);
    operands.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index++) | DNNL_ARG_SRC_1, d);
  };
  if (t.src == dt::u8) // dequantize: each output's weight step (not each row's: onednn_matmul.hpp)
    attr.set_output_scales(1 << 1, std::vector<float>(std::size_t(g.n), 1.0f / 64));
  if (g.epilogue.act != gemm_epilogue::activation::none) {
    const float alpha = g.epilogue.act == gemm_epilogue::activation::silu ? 1.0f : 0.0f; // swish's x * sigmoid(x)
    po.append_eltwise(1.0f, eltwise_of(g.epilogue.act), alpha, 0.0f);
    ++index;
  }
  if (g.epilogue.residual)
    binary(dnnl::algorithm::binary_add, {{g.m, g.n}, dt::f32, tag::ab});
  attr.set_post_ops(po);
  return attr;
}

gemm_primitive make_gemm(dnnl::engine& engine, dnnl::stream& stream, const matmul_dims& g, types t, matmul_work work,
                         std::size_t copies, std::mt19937& rng) {
  const bool fused = work == matmul_work::fused;
  const dt dst_type = !fused ? t.dst : g.epilogue.feeds_next ? t.src : dt::f32;
  const dnnl::memory::desc src{{g.m, g.k}, t.src, tag::ab}, dst{{g.m, g.n}, dst_type, tag::ab},
      plain_wei{{g.k, g.n}, t.wei, tag::ab}, any_wei{{g.k, g.n}, t.wei, tag::any}, bias{{1, g.n}, dt::f32, tag::ab};
  std::vector<std::pair<int, dnnl::memory::desc>> operands;
  dnnl::matmul::primitive_desc pd;
  try {
    pd = fused ? dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, any_wei, bias, dst), fused_attr(g, t, operands),
                                              engine)
               : dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, any_wei, dst), engine);
  } catch (const dnnl::error& e) {
    throw std::runtime_error("oneDNN matmul " + std::to_string(g.m) + "x" + std::to_string(g.n) + "x" +
                             std::to_string(g.k) + ": " + e.what());
  }
  gemm_primitive p{dnnl::matmul(pd), dnnl::memory(src, engine), dnnl::memory(dst, engine), {}, {}, pd.impl_info_str()};
  fill(p.src, t.src, rng);
  if (fused)
    operands.emplace_back(DNNL_ARG_BIAS, bias);
  for (const auto& [arg, desc] : operands) {
    p.args.emplace(arg, dnnl::memory(desc, engine));
    fill(p.args.at(arg), dt::f32, rng);
  }
  dnnl::memory plain(plain_wei, engine), packed(pd.weights_desc(), engine);
  fill(plain, t.wei, rng);
  dnnl::reorder(plain, packed).execute(stream, plain, packed);
  stream.wait();
  const std::size_t bytes = pd.weights_desc().get_size();
  for (std::size_t c = 0; c < copies; ++c) {
    p.weights.emplace_back(pd.weights_desc(), engine);
    std::memcpy(p.weights.back().get_data_handle(), packed.get_data_handle(), bytes);
  }
  return p;
}
} // namespace

matmul_set::matmul_set(const std::vector<matmul_dims>& gemms, matmul_type type, matmul_work work)
    : s_(std::make_unique<state>()) {
  const types t = types_of(type);
  std::size_t weight_bytes = 0;
  for (const auto& g : gemms)
    weight_bytes += std::size_t(g.k) * g.n * dnnl::memory::data_type_size(t.wei), s_->flops += 2.0 * g.m * g.n * g.k;
  s_->copies = timing::rotation_copies(weight_bytes);
  std::mt19937 rng(1);
  for (const auto& g : gemms) {
    s_->gemms.push_back(make_gemm(s_->engine, s_->stream, g, t, work, s_->copies, rng));
    const std::size_t i = s_->gemms.size() - 1;
    if (work == matmul_work::fused && i > 0 && gemms[i - 1].epilogue.feeds_next)
      s_->gemms[i].src = s_->gemms[i - 1].dst; // the hidden layer, as the kernel passes it on
  }
  for (auto& g : s_->gemms)
    g.args.insert({{DNNL_ARG_SRC, g.src}, {DNNL_ARG_DST, g.dst}});
}

matmul_set::~matmul_set() = default;
matmul_set::matmul_set(matmul_set&&) noexcept = default;
matmul_set& matmul_set::operator=(matmul_set&&) noexcept = default;

void matmul_set::run() {
  const std::size_t c = s_->next++ % s_->copies;
  for (auto& g : s_->gemms) {
    g.args.insert_or_assign(DNNL_ARG_WEIGHTS, g.weights[c]);
    g.prim.execute(s_->stream, g.args);
  }
  s_->stream.wait();
}

std::string matmul_set::impl() const {
  std::vector<std::string> seen;
  for (const auto& g : s_->gemms)
    if (std::find(seen.begin(), seen.end(), g.impl) == seen.end())
      seen.push_back(g.impl);
  std::string out;
  for (const auto& s : seen)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

double matmul_set::flops() const { return s_->flops; }

} // namespace halformer::onednn
