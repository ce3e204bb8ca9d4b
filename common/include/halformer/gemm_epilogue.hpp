// A GEMM a kernel computes (gemm_shape: row-major m x k times k x n) and what it
// does to its sums before they leave the kernel (gemm_epilogue), beyond
// the bias every kernel GEMM adds: an activation, a residual of the output's
// shape, or storing them as the next GEMM's input (the FFN's hidden layer, in
// the compute type). Stated by each problem (problems::gemm_dims) so that a peer
// can be given the same work (onednn::matmul_work::fused). As text (the BLAS
// harness's command line): its parts joined by '+', e.g. "relu+hidden",
// "residual"; "" for the bias alone.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace halformer {

struct gemm_epilogue {
  enum class activation { none, relu, gelu, silu };
  activation act = activation::none;
  bool residual = false;
  bool feeds_next = false;
};

// One definition for the problems (problems::gemm_dims), the oneDNN peer
// (onednn::matmul_dims) and the BLAS harness.
struct gemm_shape {
  int m, n, k;
  gemm_epilogue epilogue{};
};

inline std::string to_text(const gemm_epilogue& e) {
  using act = gemm_epilogue::activation;
  std::string s = e.act == act::relu ? "relu" : e.act == act::gelu ? "gelu" : e.act == act::silu ? "silu" : "";
  for (const auto& [on, part] : {std::pair{e.residual, "residual"}, std::pair{e.feeds_next, "hidden"}})
    if (on)
      s += (s.empty() ? "" : "+") + std::string(part);
  return s;
}

// Throws std::invalid_argument naming a part it does not know.
inline gemm_epilogue gemm_epilogue_from_text(const std::string& text) {
  using act = gemm_epilogue::activation;
  gemm_epilogue e;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, '+');) {
    if (part == "relu" || part == "gelu" || part == "silu")
      e.act = part == "relu" ? act::relu : part == "gelu" ? act::gelu : act::silu;
    else if (part == "residual")
      e.residual = true;
    else if (part == "hidden")
      e.feeds_next = true;
    else
      throw std::invalid_argument("GEMM epilogue '" + text + "': unknown part '" + part +
                                  "' (relu, gelu, silu, residual, hidden)");
  }
  return e;
}

} // namespace halformer
