#!/usr/bin/python3
"""Writes the benchmark model: Transformer-base (d_model 512, 8 heads, d_ff 2048,
6 + 6 layers, pre-norm so that CTranslate2's spec represents it exactly, vocab
32000) with random weights, as a halformer model directory; and a file of random
source sentences. EOS gets a -1e4 logit bias, so no system ever ends a sentence
early: every run decodes exactly the requested number of tokens.

usage: /usr/bin/python3 bench/make_model.py OUT_DIR [--sources N --src-len L]"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from export_torch import Seq2SeqTransformer, export  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    for name, default in (("--vocab", 32000), ("--sources", 32), ("--src-len", 32), ("--seed", 0)):
        p.add_argument(name, type=int, default=default)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    model = Seq2SeqTransformer(a.vocab, a.vocab, 512, 8, 6, 6, 2048, "relu", norm_first=True).eval()
    with torch.no_grad():
        model.generator.bias[2] = -1e4  # EOS (id 2) never wins
    export(model, a.out)
    g = torch.Generator().manual_seed(a.seed + 1)
    ids = torch.randint(4, a.vocab, (a.sources, a.src_len), generator=g)
    with open(os.path.join(a.out, "sources.txt"), "w") as f:
        for row in ids.tolist():
            f.write(" ".join(map(str, row)) + "\n")
    print(f"wrote {a.out} (Transformer-base, vocab {a.vocab}) and {a.sources} sources of {a.src_len} tokens")


if __name__ == "__main__":
    main()
