#!/usr/bin/python3
"""PyTorch baselines (Debian's python3-torch), with the same weights and threads:

  torch_bench.py e2e MODEL_DIR SOURCES --mode encode|greedy|beam --batch B [--beam K]
                 [--new-tokens N] [--threads T] [--samples S]
      nn.Transformer end to end. Decoding re-runs the decoder on the whole prefix
      at every step: PyTorch's nn.Transformer has no KV cache.
  torch_bench.py mha --seq S [--threads T] [--samples S]
      nn.MultiheadAttention (d_model 512, 8 heads, self-attention, batch 1).

Prints one JSON object (times, tokens/s, peak RSS, first sample's tokens)."""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tools"))
sys.path.insert(0, here)
from export_torch import Seq2SeqTransformer  # noqa: E402
from model_io import peak_rss_mb, read_config, read_safetensors, read_sources  # noqa: E402


def load(model_dir):
    c = read_config(model_dir)
    m = Seq2SeqTransformer(c["src_vocab"], c["tgt_vocab"], c["d_model"], c["nhead"], c["num_encoder_layers"],
                           c["num_decoder_layers"], c["dim_feedforward"], c["activation"], c["norm_first"],
                           c["layer_norm_eps"]).eval()
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    m.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
    return m, c


def greedy(m, c, src, n):
    memory, mask = m.encode(src, c["pad_id"])
    ys = torch.full((src.shape[0], 1), c["bos_id"], dtype=torch.long)
    for _ in range(n):
        nxt = m.decode(memory, mask, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], 1)
    return ys[:, 1:]


def beam(m, c, src, n, k):
    b = src.shape[0]
    memory, mask = m.encode(src, c["pad_id"])
    memory, mask = memory.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)
    ys = torch.full((b * k, 1), c["bos_id"], dtype=torch.long)
    scores = torch.full((b, k), float("-inf"))
    scores[:, 0] = 0
    for _ in range(n):
        logp = torch.log_softmax(m.decode(memory, mask, ys)[:, -1], -1)  # (b*k, V)
        v = logp.shape[-1]
        total = (scores.unsqueeze(-1) + logp.view(b, k, v)).view(b, k * v)
        scores, idx = total.topk(k, -1)
        parent = idx // v + torch.arange(b).unsqueeze(1) * k
        ys = torch.cat([ys[parent.view(-1)], (idx % v).view(-1, 1)], 1)
    return ys.view(b, k, -1)[:, 0, 1:]


def timed(fn, samples, warmup=None):
    (warmup or fn)()  # warm-up (decoding: a 2-token run, as the other systems)
    out, secs = None, []
    for s in range(samples):
        t0 = time.perf_counter()
        r = fn()
        secs.append(time.perf_counter() - t0)
        if s == 0:
            out = r
    secs.sort()
    return out, secs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["e2e", "mha"])
    p.add_argument("model", nargs="?")
    p.add_argument("sources", nargs="?")
    p.add_argument("--mode", default="greedy", choices=["encode", "greedy", "beam"])
    for name, default in (("--batch", 1), ("--beam", 4), ("--new-tokens", 64), ("--seq", 128), ("--threads", 2),
                          ("--samples", 3)):
        p.add_argument(name, type=int, default=default)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    if a.what == "mha":
        mha = torch.nn.MultiheadAttention(512, 8, batch_first=True).eval()
        xs = [torch.randn(1, a.seq, 512) for _ in range(4)]
        i = [0]

        def call():
            i[0] += 1
            x = xs[i[0] % len(xs)]
            return mha(x, x, x, need_weights=False)[0]

        _, secs = timed(call, a.samples)
        # Per-call times: repeat inside a sample until >= 20 ms, like the C++ benchmarks.
        reps = max(1, int(0.02 / max(secs[0], 1e-6)))
        per = []
        for _ in range(a.samples):
            t0 = time.perf_counter()
            for _ in range(reps):
                call()
            per.append((time.perf_counter() - t0) / reps * 1e3)
        per.sort()
        print(json.dumps({"system": "pytorch", "what": "mha", "seq": a.seq, "median_ms": per[len(per) // 2],
                          "min_ms": per[0], "max_ms": per[-1], "samples": a.samples, "threads": a.threads,
                          "torch": torch.__version__}))
        return
    m, c = load(a.model)
    rows = read_sources(a.sources, a.batch)
    src = torch.tensor(rows, dtype=torch.long)
    if a.mode == "encode":
        out, secs = timed(lambda: m.encode(src, c["pad_id"]), a.samples)
        tokens, first = src.numel(), []
    else:
        def run(n):
            return greedy(m, c, src, n) if a.mode == "greedy" else beam(m, c, src, n, a.beam)
        out, secs = timed(lambda: run(a.new_tokens), a.samples, lambda: run(2))
        tokens, first = out.numel(), out.tolist()
    med = secs[len(secs) // 2]
    print(json.dumps({"system": "pytorch", "mode": a.mode, "batch": a.batch,
                      "beam": a.beam if a.mode == "beam" else 1, "median_s": med, "min_s": secs[0],
                      "max_s": secs[-1], "samples": a.samples, "tokens": tokens, "tokens_per_s": tokens / med,
                      "peak_rss_mb": peak_rss_mb(), "threads": a.threads, "torch": torch.__version__,
                      "first_tokens": first}))


if __name__ == "__main__":
    main()
