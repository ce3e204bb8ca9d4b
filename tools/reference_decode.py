"""Float64 reference decoding for parity fixtures: greedy and beam search that
re-run the whole decoder on each prefix (no caches), in float64, following the
search rules of runtime/src/beam_search.hpp exactly:

- K live beams per sentence, only the first live at step 0, all from BOS;
- each step every live beam proposes its 2K best next tokens; proposals are
  ranked by accumulated log-probability (ties: lower beam, then lower token);
- in rank order an EOS proposal finishes a hypothesis (while < K finished), any
  other extends a beam, until K beams are extended;
- a sentence is done at K finished, when no beam was extended, or after max_len
  tokens (live beams then finish without EOS);
- hypotheses rank by logP / len^length_penalty (len counts EOS).

Also reports the smallest decision margin seen, so fixtures can avoid near-ties
that float32 rounding could flip.
"""
import math

import torch


def beam_search(model, src_row, pad_id, bos_id, eos_id, beam, max_len, length_penalty):
    """src_row: 1-d LongTensor without padding. Returns (hyps, margin)."""
    model = model.double()
    src = src_row.unsqueeze(0)
    with torch.no_grad():
        memory, mask = model.encode(src, pad_id)
    live = [([], 0.0)]  # (tokens, score)
    finished = []
    margin = math.inf
    for step in range(max_len):
        props = []
        for b, (tokens, score) in enumerate(live):
            tgt = torch.tensor([[bos_id] + tokens])
            with torch.no_grad():
                logits = model.decode(memory, mask, tgt)[0, -1]
            lp = torch.log_softmax(logits, dim=-1)
            vals, idx = torch.sort(lp, descending=True, stable=True)
            for v, i in zip(vals[: 2 * beam].tolist(), idx[: 2 * beam].tolist()):
                props.append((score + v, b, i))
            if len(vals) > 2 * beam:  # the 2K-th vs the next proposal of this beam
                margin = min(margin, vals[2 * beam - 1].item() - vals[2 * beam].item())
        props.sort(key=lambda p: (-p[0], p[1], p[2]))
        new_live, taken = [], 0
        for k, (score, b, tok) in enumerate(props):
            if k + 1 < len(props):
                margin = min(margin, score - props[k + 1][0])
            tokens = live[b][0]
            if tok == eos_id:
                if len(finished) < beam:
                    finished.append((tokens + [tok], score / (step + 1) ** length_penalty))
            else:
                new_live.append((tokens + [tok], score))
                taken += 1
            if taken == beam:
                break
        last = step == max_len - 1
        if last:
            for tokens, score in new_live:
                if len(finished) < beam:
                    finished.append((tokens, score / (step + 1) ** length_penalty))
        live = new_live
        if len(finished) >= beam or taken == 0 or last:
            break
    order = sorted(range(len(finished)), key=lambda i: -finished[i][1])
    for a, b in zip(order, order[1:]):
        margin = min(margin, finished[a][1] - finished[b][1])
    return [finished[i] for i in order], margin
