// The sinusoid's frequencies: pair i's is exp(-i * step) (the embedding kernels'
// frequency_step). One definition for the runtime, the kernel tests and problems.
#pragma once

#include <cmath>

namespace halformer {

// The paper's (and Marian's) 10000^(-2i / d_model), or fairseq's 10000^(-i /
// (d_model / 2 - 1)) (M2M100, NLLB; d_model >= 4).
inline double sinusoid_frequency_step(int d_model, bool fairseq) {
  return fairseq ? std::log(10000.0) / (d_model / 2 - 1) : 2.0 * std::log(10000.0) / d_model;
}

} // namespace halformer
