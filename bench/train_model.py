#!/usr/bin/python3
"""Trains the natural-length benchmark model: a small pre-norm ReLU Transformer
(d_model 128, 4 heads, d_ff 512, 2 + 2 layers, vocab 1000: CTranslate2's spec
represents it exactly) taught to copy its source, so that its outputs end (EOS)
at the sources' different lengths and a batch's sentences finish at different
steps. It is small so that two CPU cores teach it in a couple of minutes
(--seconds); the copy accuracy it reached is written beside the model
(training.json) and printed. Sources: 64 held-out sentences of 4-24 tokens.

usage: /usr/bin/python3 bench/train_model.py OUT_DIR [--seconds S | --steps N] [--threads T]"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from export_torch import Seq2SeqTransformer, export  # noqa: E402

PAD, BOS, EOS, FIRST = 0, 1, 2, 4  # ids 0-3 are special (pad, bos, eos, unk)


def batch_of(g, n, lo, hi, alphabet):
    """n sources of lo..hi random tokens (padded), and the copy task's decoder input/output."""
    lens = torch.randint(lo, hi + 1, (n,), generator=g)
    src = torch.full((n, hi), PAD, dtype=torch.long)
    tgt_in = torch.full((n, hi + 1), PAD, dtype=torch.long)
    tgt_out = torch.full((n, hi + 1), PAD, dtype=torch.long)
    for i, L in enumerate(lens.tolist()):
        s = torch.randint(FIRST, FIRST + alphabet, (L,), generator=g)
        src[i, :L] = s
        tgt_in[i, 0], tgt_in[i, 1:L + 1] = BOS, s
        tgt_out[i, :L], tgt_out[i, L] = s, EOS
    return src, tgt_in, tgt_out, lens


@torch.no_grad()
def copy_accuracy(model, src, lens, max_len):
    """Greedy decoding (no cache: small model, few sentences): exact copies + EOS."""
    memory, mask = model.encode(src, PAD)
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(max_len):
        nxt = model.decode(memory, mask, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, nxt], 1)
    exact = 0
    for i, L in enumerate(lens.tolist()):
        exact += int(ys[i, 1:L + 2].tolist() == src[i, :L].tolist() + [EOS])
    return exact / len(lens)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seconds", type=float, default=150)
    p.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: after --seconds); "
                   "a fixed count trains the same model on any machine")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--alphabet", type=int, default=100, help="tokens the sources use (of the 1000)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(a.seed)
    model = Seq2SeqTransformer(1000, 1000, 128, 4, 2, 2, 512, "relu", norm_first=True)
    for table in (model.src_embed, model.tgt_embed):  # ~1 after the sqrt(d_model) scale, as the positions
        torch.nn.init.normal_(table.weight, std=128 ** -0.5)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=PAD)
    start, step, loss = time.time(), 0, float("nan")
    while (step < a.steps) if a.steps else (time.time() - start < a.seconds):
        src, tgt_in, tgt_out, _ = batch_of(g, 64, 4, 24, a.alphabet)
        logits = model(src, tgt_in, PAD)
        l = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        opt.zero_grad()
        l.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step, loss = step + 1, l.item()
        if step % 100 == 0:
            print(f"step {step}: loss {loss:.3f} ({time.time() - start:.0f} s)", file=sys.stderr)
    model.eval()
    held_out = torch.Generator().manual_seed(a.seed + 1)
    src, _, _, lens = batch_of(held_out, 64, 4, 24, a.alphabet)
    acc = copy_accuracy(model, src[:16], lens[:16], 26)
    export(model, a.out, pad_id=PAD, bos_id=BOS, eos_id=EOS)
    with open(os.path.join(a.out, "sources.txt"), "w") as f:
        for i, L in enumerate(lens.tolist()):
            f.write(" ".join(map(str, src[i, :L].tolist())) + "\n")
    info = {"task": "copy", "steps": step, "seconds": round(time.time() - start, 1), "final_loss": loss,
            "copy_exact_16_held_out": acc, "alphabet": a.alphabet, "source_lengths": "4-24"}
    with open(os.path.join(a.out, "training.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"wrote {a.out}: {step} steps in {info['seconds']} s, loss {loss:.3f}, "
          f"held-out exact copies {acc:.0%}")


if __name__ == "__main__":
    main()
