// The parity fixtures written by tools/make_fixtures.py (tests/fixtures/<name>/).
#pragma once

#include "halformer/model.hpp"
#include "halformer/npy.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fixtures {

// The committed fixtures (tests/fixtures), then the one the build makes at
// Transformer-base width (d_model 512, 8 heads of d_k 64, d_ff 2048, 2+2 layers,
// vocab 1000/1200), so the d_k = 64 attention branch and the decode GEMVs run
// through the whole model.
inline const std::vector<std::string>& names() {
  static const std::vector<std::string> n{"post_ln_relu", "pre_ln_gelu", "post_ln_gelu_deep", "pre_ln_relu_heads8",
                                          "base_width"};
  return n;
}
// Built too: "trained_copy", the copy-task model of bench/train_model.py (d_model
// 128, trained a fixed number of steps), with its 64 held-out sources.
inline std::string dir(const std::string& name) {
  const bool built = name == "base_width" || name == "trained_copy";
  return std::string(built ? HALFORMER_BUILT_FIXTURES : HALFORMER_FIXTURES) + "/" + name;
}

inline nlohmann::json expected(const std::string& name) {
  std::ifstream in(dir(name) + "/expected.json");
  return nlohmann::json::parse(in);
}

inline std::vector<halformer::sentence> rows(const halformer::npy::int_array& a) {
  std::vector<halformer::sentence> r(std::size_t(a.shape[0]));
  for (std::size_t b = 0; b < r.size(); ++b)
    for (std::int64_t j = 0; j < a.shape[1]; ++j)
      r[b].push_back(int(a.data[b * a.shape[1] + j]));
  return r;
}

// The fixture's source sentences without padding.
inline std::vector<halformer::sentence> sources(const std::string& name) {
  auto padded = rows(halformer::npy::read_ints(dir(name) + "/src.npy"));
  auto lengths = expected(name)["src_lengths"].get<std::vector<int>>();
  for (std::size_t b = 0; b < padded.size(); ++b)
    padded[b].resize(std::size_t(lengths[b]));
  return padded;
}

// The fixture `name` loaded with GEMMs in `compute_type`.
inline halformer::Model load(const std::string& name, const std::string& compute_type) {
  halformer::load_options o;
  o.compute_type = compute_type;
  return halformer::Model::load(dir(name), o);
}

// Greedy outputs of the trained copy-task model in `compute_type` against
// float32's, on its 64 held-out sources: how many are identical, and how many of
// float32's are exact copies (the model has learnt its task, so its decisions
// are not near-ties that any rounding of the weights flips).
struct agreement {
  int same = 0, copies = 0, sentences = 0;
};
// The trained copy-task model's 64 held-out sources.
inline std::vector<halformer::sentence> trained_sources() {
  std::vector<halformer::sentence> src;
  std::ifstream in(dir("trained_copy") + "/sources.txt");
  for (std::string line; std::getline(in, line);) {
    std::istringstream ids(line);
    src.emplace_back(std::istream_iterator<int>(ids), std::istream_iterator<int>());
  }
  return src;
}

inline agreement trained_copy_agreement(const std::string& compute_type) {
  const std::string d = dir("trained_copy");
  const std::vector<halformer::sentence> src = trained_sources();
  halformer::load_options lo;
  halformer::Model f = halformer::Model::load(d, lo);
  lo.compute_type = compute_type;
  halformer::Model q = halformer::Model::load(d, lo);
  halformer::decode_options o;
  o.max_len = 30;
  const auto hf = f.translate(src, o), hq = q.translate(src, o);
  agreement a;
  a.sentences = int(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    a.same += hf[i][0].tokens == hq[i][0].tokens;
    auto want = src[i];
    want.push_back(f.config().eos_id);
    a.copies += hf[i][0].tokens == want;
  }
  return a;
}

// Two models' teacher-forced logits on a fixture's source and target ids.
inline std::pair<std::vector<float>, std::vector<float>> logits_of(halformer::Model& a, halformer::Model& b,
                                                                   const std::string& name) {
  const auto src = rows(halformer::npy::read_ints(dir(name) + "/src.npy"));
  const auto tgt = rows(halformer::npy::read_ints(dir(name) + "/tgt.npy"));
  std::pair<std::vector<float>, std::vector<float>> logits;
  a.forward(src, tgt, logits.first);
  b.forward(src, tgt, logits.second);
  return logits;
}

} // namespace fixtures
