"""`halformer translate` on the trained copy-task MarianMT fixture (train_marian.py):
its held-out lines must come back as their copies (the task: at least 29 of 32,
where the fixture copies 31), and identical to transformers' generate +
batch_decode, greedy and with beam 4 (all 32); with int8 GEMMs, copies too (28+).

usage: marian_trained_test.py HALFORMER_CLI FIXTURE_DIR
"""
import os
import subprocess
import sys

import torch
from transformers import MarianMTModel, MarianTokenizer

from comparison import differences, finish


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def main():
    cli, fixture = sys.argv[1], sys.argv[2]
    sources = read_lines(os.path.join(fixture, "sources.txt"))
    expected = read_lines(os.path.join(fixture, "expected.txt"))
    tokenizer = MarianTokenizer.from_pretrained(fixture)
    model = MarianMTModel.from_pretrained(fixture).eval()
    failures = []
    for beam in (1, 4):
        out = subprocess.run([cli, "translate", "--model", fixture, "--input", os.path.join(fixture, "sources.txt"),
                              "--beam", str(beam), "--length-penalty", "1", "--max-len", "48", "--threads", "2"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"halformer translate failed: {out.stderr}")
        got = out.stdout.split("\n")[:-1]
        batch = tokenizer(sources, return_tensors="pt", padding=True)
        with torch.no_grad():
            ids = model.generate(**batch, num_beams=beam, max_new_tokens=48, length_penalty=1.0,
                                 early_stopping=beam > 1)
        want = tokenizer.batch_decode(ids, skip_special_tokens=True)
        copies = sum(g == e for g, e in zip(got, expected))
        same = sum(g == w for g, w in zip(got, want))
        print(f"beam {beam}: {copies}/{len(sources)} exact copies, {same}/{len(sources)} identical to transformers")
        if copies < 29:
            failures.append(f"beam {beam}: only {copies} of {len(sources)} lines copied")
        failures += differences(f"beam {beam} line", got, want)
    # int8 (weights quantized at load; the tied table shared by embedding and logits) copies as well.
    out = subprocess.run([cli, "translate", "--model", fixture, "--input", os.path.join(fixture, "sources.txt"),
                          "--compute-type", "int8", "--max-len", "48", "--threads", "2"], capture_output=True, text=True)
    copies = sum(g == e for g, e in zip(out.stdout.split("\n")[:-1], expected))
    print(f"int8 greedy: {copies}/{len(sources)} exact copies")
    if out.returncode != 0 or copies < 28:  # 30-31 seen (Zen 3): int8 flips a near-tie or two
        failures.append(f"int8 greedy: {copies} of {len(sources)} lines copied ({out.stderr.strip()})")
    finish(failures)


if __name__ == "__main__":
    main()
