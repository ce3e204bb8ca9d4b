// Random sampling's step (executor.hpp: sample()): the rows' inputs into the
// buffers the sampling plan reads, the options into its scalars, one kernel call.
#include "executor.hpp"

#include "halformer/error.hpp"

#include <algorithm>

namespace halformer {

void executor::fill_sampling_rows(const sampling_rows& rows) {
  const auto longest = [&](const std::vector<std::vector<int>>& lists) {
    std::size_t n = 1; // a row of no tokens is one -1
    for (const auto& l : lists)
      n = std::max(n, l.size());
    return int(n);
  };
  const int rules = std::max(longest(rows.banned), longest(rows.penalized));
  if (sample_banned_.dim(0).extent() < rules) // both lists share the kernel's `rule` extent
    sample_banned_ = ibuffer(rules, 1, rows_cap_), sample_penalized_ = ibuffer(rules, 1, rows_cap_);
  const int width = sample_banned_.dim(0).extent();
  for (int r = 0; r < rows_; ++r) {
    sample_draws_.as<float>()(0, r) = rows.draws[std::size_t(r)];
    sample_forced_(0, r) = rows.forced[std::size_t(r)];
    for (auto [lists, b] : {std::pair{&rows.banned, &sample_banned_}, std::pair{&rows.penalized, &sample_penalized_}}) {
      const auto& l = (*lists)[std::size_t(r)];
      for (int i = 0; i < width; ++i)
        (*b)(i, 0, r) = i < int(l.size()) ? l[std::size_t(i)] : -1;
    }
  }
  upload(sample_draws_);
  for (ibuffer* b : {&sample_forced_, &sample_banned_, &sample_penalized_})
    upload(*b);
}

void executor::sample(const decode_options& o, const sampling_rows& rows, const int*& ids, const float*& log_probs) {
  if (t_ != 1)
    throw error("sample: the last decode() ran " + std::to_string(t_) + " positions; sampling steps run one");
  for (const std::size_t n : {rows.draws.size(), rows.forced.size(), rows.banned.size(), rows.penalized.size()})
    if (n != std::size_t(rows_))
      throw error("sample: " + std::to_string(n) + " rows of inputs for " + std::to_string(rows_) + " rows");
  sample_options_.at("sampling_topk") = o.sampling_topk;
  sample_options_.at("sampling_topp") = o.sampling_topp;
  sample_options_.at("sampling_temperature") = o.sampling_temperature;
  sample_options_.at("repetition_penalty") = o.repetition_penalty;
  fill_sampling_rows(rows);
  run(sampling_, phase::decode);
  picked(ids, log_probs);
}

} // namespace halformer
