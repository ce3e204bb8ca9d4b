// Independent float64 reference implementations of every kernel, written directly
// from the definitions (the paper, PyTorch's semantics) in plain C++: no Halide, no
// code shared with the DSL or the generators. Tensors use Halide's dimension order
// (dim 0 innermost) so shapes read the same as the kernels' documentation.
#pragma once

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace ref {

struct tensor {
  std::vector<int> dims;
  std::vector<double> data;

  tensor() = default;
  explicit tensor(std::vector<int> d) : dims(std::move(d)) {
    std::size_t n = 1;
    for (int e : dims)
      n *= std::size_t(e);
    data.assign(n, 0.0);
  }
  std::size_t index(std::initializer_list<int> at) const {
    assert(at.size() == dims.size());
    std::size_t i = 0, stride = 1, k = 0;
    for (int a : at) {
      assert(a >= 0 && a < dims[k]);
      i += std::size_t(a) * stride;
      stride *= std::size_t(dims[k++]);
    }
    return i;
  }
  template <class... I> double& operator()(I... at) { return data[index({int(at)...})]; }
  template <class... I> double operator()(I... at) const { return data[index({int(at)...})]; }
};

// y(o, t, b) = sum_i x(i, t, b) w(o, i) + bias(o)     (w in (out, in) order)
inline tensor linear(const tensor& x, const tensor& w, const tensor& bias) {
  const int in = x.dims[0], T = x.dims[1], B = x.dims[2], out = w.dims[0];
  tensor y({out, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int o = 0; o < out; ++o) {
        double s = bias(o);
        for (int i = 0; i < in; ++i)
          s += x(i, t, b) * w(o, i);
        y(o, t, b) = s;
      }
  return y;
}

// x(:, t, b) of a (features, T, B) tensor.
inline std::vector<double> row_of(const tensor& x, int t, int b) {
  std::vector<double> row(static_cast<std::size_t>(x.dims[0]));
  for (int i = 0; i < x.dims[0]; ++i)
    row[std::size_t(i)] = x(i, t, b);
  return row;
}

// Symmetric int8 quantization of one row as halformer defines it (dsl/expr.hpp):
// step = max |x| / 127, q = x * (1 / step) rounded half to even and clamped to
// +-127, in float32 (the definition's arithmetic; x holds float32 values). A zero
// row has step 0 and all-zero values.
struct quantized_row {
  std::vector<std::int64_t> q;
  float step = 0;
};
inline quantized_row quantize_row(const std::vector<double>& x) {
  quantized_row r;
  float amax = 0;
  for (double v : x)
    amax = std::max(amax, std::abs(float(v)));
  r.step = amax / 127.0f;
  const float inverse = r.step > 0 ? 1.0f / r.step : 0.0f;
  for (double v : x)
    r.q.push_back(std::int64_t(std::clamp(std::nearbyint(float(v) * inverse), -127.0f, 127.0f)));
  return r;
}

// y(o, t, b) = step_x(t, b) w_step(o) sum_i q_x(i, t, b) w(o, i) + bias(o), w holding
// int8 values (out, in), as linear's: the sum exact (int64), the rest float64.
inline tensor quantized_linear(const tensor& x, const tensor& w, const tensor& w_step, const tensor& bias) {
  const int in = x.dims[0], T = x.dims[1], B = x.dims[2], out = w.dims[0];
  tensor y({out, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const quantized_row q = quantize_row(row_of(x, t, b));
      for (int o = 0; o < out; ++o) {
        std::int64_t sum = 0;
        for (int i = 0; i < in; ++i)
          sum += q.q[std::size_t(i)] * std::int64_t(w(o, i));
        y(o, t, b) = double(sum) * q.step * w_step(o) + bias(o);
      }
    }
  return y;
}

// (d_model, t, b) -> (d_k, t, heads, b), feature = head * d_k + j
inline tensor split_heads(const tensor& x, int heads) {
  const int dm = x.dims[0], T = x.dims[1], B = x.dims[2], dk = dm / heads;
  tensor y({dk, T, heads, B});
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < heads; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < dk; ++j)
          y(j, t, h, b) = x(h * dk + j, t, b);
  return y;
}
inline tensor merge_heads(const tensor& x) {
  const int dk = x.dims[0], T = x.dims[1], H = x.dims[2], B = x.dims[3];
  tensor y({dk * H, T, B});
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < dk; ++j)
          y(h * dk + j, t, b) = x(j, t, h, b);
  return y;
}

inline bool attends(int key, int query, int length, bool causal, int offset) {
  return key < length && (!causal || key <= query + offset);
}

// softmax(q.k / sqrt(d_k), masked) . v; a row with no valid key is zeros.
inline tensor attention(const tensor& q, const tensor& k, const tensor& v, const std::vector<int>& lengths, bool causal,
                        int offset) {
  const int dk = q.dims[0], T = q.dims[1], H = q.dims[2], B = q.dims[3], Tk = k.dims[1];
  tensor out({dk, T, H, B});
  std::vector<double> s(static_cast<std::size_t>(Tk));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < T; ++t) {
        double m = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < Tk; ++j) {
          if (!attends(j, t, lengths[b], causal, offset))
            continue;
          double d = 0;
          for (int i = 0; i < dk; ++i)
            d += q(i, t, h, b) * k(i, j, h, b);
          s[j] = d / std::sqrt(double(dk));
          m = std::max(m, s[j]);
        }
        double z = 0;
        for (int j = 0; j < Tk; ++j)
          if (attends(j, t, lengths[b], causal, offset))
            z += std::exp(s[j] - m);
        for (int i = 0; i < dk; ++i) {
          double acc = 0;
          for (int j = 0; j < Tk; ++j)
            if (attends(j, t, lengths[b], causal, offset))
              acc += std::exp(s[j] - m) / z * v(i, j, h, b);
          out(i, t, h, b) = z > 0 ? acc : 0.0;
        }
      }
  return out;
}

// Softmax over dim 0 of (n, t, b) with the attention masks; masked entries are 0
// (softmax) or the lowest float (log-softmax), a fully masked row likewise.
inline tensor softmax(const tensor& x, const std::vector<int>& lengths, bool causal, int offset, bool log) {
  const int N = x.dims[0], T = x.dims[1], B = x.dims[2];
  tensor y({N, T, B});
  const double lowest = std::numeric_limits<float>::lowest();
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      double m = -std::numeric_limits<double>::infinity(), z = 0;
      for (int n = 0; n < N; ++n)
        if (attends(n, t, lengths[b], causal, offset))
          m = std::max(m, x(n, t, b));
      for (int n = 0; n < N; ++n)
        if (attends(n, t, lengths[b], causal, offset))
          z += std::exp(x(n, t, b) - m);
      for (int n = 0; n < N; ++n) {
        const bool ok = attends(n, t, lengths[b], causal, offset);
        y(n, t, b) = log ? (ok ? x(n, t, b) - m - std::log(z) : lowest) : (ok ? std::exp(x(n, t, b) - m) / z : 0.0);
      }
    }
  return y;
}

// Greedy decoding's pick per row of x (n, t, b): the index of the largest value
// (the first one on ties) and its log-probability log softmax(x)[index].
struct pick {
  std::vector<int> ids;      // (t, b), t fastest
  std::vector<double> log_p; // (t, b)
};
inline pick greedy_pick(const tensor& x) {
  const int N = x.dims[0], T = x.dims[1], B = x.dims[2];
  pick p;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      int best = 0;
      for (int n = 1; n < N; ++n)
        if (x(n, t, b) > x(best, t, b))
          best = n;
      double z = 0;
      for (int n = 0; n < N; ++n)
        z += std::exp(x(n, t, b) - x(best, t, b));
      p.ids.push_back(best);
      p.log_p.push_back(-std::log(z));
    }
  return p;
}

// Beam candidates' chunk maxima of x (n, t, b): the largest of every `size`
// consecutive values along n (the last chunk may be short), (chunks, t, b).
inline tensor chunk_maxima(const tensor& x, int size) {
  const int N = x.dims[0], T = x.dims[1], B = x.dims[2], C = (N + size - 1) / size;
  tensor y({C, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        double m = x(c * size, t, b);
        for (int n = c * size; n < std::min(N, (c + 1) * size); ++n)
          m = std::max(m, x(n, t, b));
        y(c, t, b) = m;
      }
  return y;
}

inline tensor layernorm(const tensor& x, const tensor& gamma, const tensor& beta, double eps) {
  const int D = x.dims[0], T = x.dims[1], B = x.dims[2];
  tensor y({D, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      double mean = 0, var = 0;
      for (int d = 0; d < D; ++d)
        mean += x(d, t, b);
      mean /= D;
      for (int d = 0; d < D; ++d)
        var += (x(d, t, b) - mean) * (x(d, t, b) - mean);
      var /= D;
      for (int d = 0; d < D; ++d)
        y(d, t, b) = (x(d, t, b) - mean) / std::sqrt(var + eps) * gamma(d) + beta(d);
    }
  return y;
}

inline tensor add(const tensor& a, const tensor& b) {
  tensor y = a;
  for (std::size_t i = 0; i < y.data.size(); ++i)
    y.data[i] += b.data[i];
  return y;
}

inline double relu(double x) { return x > 0 ? x : 0; }
inline double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
inline double silu(double x) { return x / (1 + std::exp(-x)); }

// The FFN activations, by the names model configurations use.
enum class activation { relu, gelu, silu };
inline double activate(activation a, double x) {
  return a == activation::relu ? relu(x) : a == activation::gelu ? gelu(x) : silu(x);
}
inline activation activation_named(const std::string& name) {
  if (name == "relu" || name == "gelu" || name == "silu")
    return name == "relu" ? activation::relu : name == "gelu" ? activation::gelu : activation::silu;
  throw std::invalid_argument("no reference activation '" + name + "'");
}

// residual + W2 act(W1 x + b1) + b2
inline tensor ffn(const tensor& x, const tensor& residual, const tensor& w1, const tensor& b1, const tensor& w2,
                  const tensor& b2, activation act) {
  tensor h = linear(x, w1, b1);
  for (double& v : h.data)
    v = activate(act, v);
  return add(residual, linear(h, w2, b2));
}

// The quantized FFN: residual + W2 act(W1 x + b1) + b2 with int8 weights w1
// (d_ff, d_model) and w2 (d_model, d_ff) (out, in) and their steps, x and the
// activated hidden row each quantized per row. The hidden layer is float64 here
// and float32 in a kernel, so a hidden value within `ambiguity` of a rounding
// boundary (in units of its step; float32 and erf errors are ~1e-5 of a step)
// may round either way: `slack` is, per output, what such roundings can change
// (one step of each such value times its weight and steps). Everything else is
// the exact quantized arithmetic.
struct quantized_ffn_result {
  tensor y, slack;
};
inline quantized_ffn_result quantized_ffn(const tensor& x, const tensor& residual, const tensor& w1, const tensor& s1,
                                          const tensor& b1, const tensor& w2, const tensor& s2, const tensor& b2,
                                          activation act, double ambiguity = 1e-3) {
  const int D = x.dims[0], T = x.dims[1], B = x.dims[2], F = w1.dims[0];
  tensor h = quantized_linear(x, w1, s1, b1);
  for (double& v : h.data)
    v = activate(act, v);
  quantized_ffn_result r{add(residual, quantized_linear(h, w2, s2, b2)), tensor({D, T, B})};
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::vector<double> row = row_of(h, t, b);
      const quantized_row q = quantize_row(row);
      const float inverse = q.step > 0 ? 1.0f / q.step : 0.0f;
      for (int j = 0; j < F; ++j) {
        const double scaled = double(float(row[std::size_t(j)]) * inverse);
        if (std::abs(scaled - std::floor(scaled) - 0.5) >= ambiguity)
          continue;
        for (int o = 0; o < D; ++o)
          r.slack(o, t, b) += std::abs(w2(o, j)) * q.step * s2(o);
      }
    }
  return r;
}

// Interleaved (the paper): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) =
// cos(pos / 10000^(2i/d)). Split (Marian, as transformers' MarianSinusoidalPositional-
// Embedding writes it): the sines of i = 0 .. ceil(d/2) - 1 first, then the cosines.
// fairseq: pair i's frequency 10000^(-i / (d_model / 2 - 1)) (M2M100, NLLB), not
// the paper's 10000^(-2i / d_model).
inline double positional(int pos, int d, int d_model, bool split = false, bool fairseq = false) {
  const int sines = (d_model + 1) / 2;
  const int i = split ? (d < sines ? d : d - sines) : d / 2;
  const double exponent = fairseq ? double(i) / (d_model / 2 - 1) : 2.0 * i / d_model;
  const double angle = pos / std::pow(10000.0, exponent);
  return (split ? d < sines : d % 2 == 0) ? std::sin(angle) : std::cos(angle);
}

inline tensor embedding(const tensor& table, const std::vector<std::vector<int>>& ids, double scale, int offset,
                        bool split_positions = false, bool fairseq = false) {
  const int D = table.dims[0], T = int(ids[0].size()), B = int(ids.size());
  tensor y({D, T, B});
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int d = 0; d < D; ++d)
        y(d, t, b) = table(d, ids[b][t]) * scale + positional(t + offset, d, D, split_positions, fairseq);
  return y;
}

} // namespace ref
