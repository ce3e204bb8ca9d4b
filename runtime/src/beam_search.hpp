// Beam search (greedy is beam 1) over the executor's incremental decoder; the
// options' prefixes, sampling and bans as decode_rules.hpp describes them.
// `first`: the call's index of the batch's first sentence (its prefix, its draws).
//
// Per sentence, K live beams start from BOS (only the first is live at step 0).
// Each step every live beam proposes its 2K best next tokens; all proposals are
// ranked by accumulated log-probability (ties: lower beam, then lower token id).
// Taken in rank order, an EOS proposal becomes a finished hypothesis (while fewer
// than K are finished) and any other token extends a beam, until K beams are
// extended. A sentence is done when K hypotheses are finished or max_len tokens
// were generated (then its live beams finish without EOS). Hypotheses are ranked
// by log P / length^length_penalty, length counting EOS. Caches are reordered
// by parent beam after every step; finished sentences leave the batch (their
// rows are dropped from the caches once they are an eighth of it); nothing is
// allocated inside the step loop.
#pragma once

#include "executor.hpp"
#include "halformer/model.hpp"

#include <functional>

namespace halformer {

void beam_search(executor& e, const model_config& config, const ibuffer& ids, const ibuffer& lengths,
                 const decode_options& options, std::size_t first,
                 const std::function<void(std::size_t, std::vector<hypothesis>)>& on_done);

} // namespace halformer
