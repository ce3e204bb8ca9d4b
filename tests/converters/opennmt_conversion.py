"""tools/convert_opennmt.py against a float64 reference of OpenNMT-py's
transformer written here from its architecture (onmt/encoders/transformer.py,
onmt/decoders/transformer.py, onmt/modules: pre-norm layers with final norms,
LayerNorm epsilon 1e-6, embeddings times sqrt(d) plus the paper's interleaved
sinusoids from 0, linear_query/keys/values + final_linear attention, a position-
wise FFN with its own LayerNorm, a generator with a bias), under OpenNMT-py's
parameter names. OpenNMT-py itself is not installed here (it would bring a
second torch from PyPI).

Checkpoints as onmt_train saves them (model, generator, opt, vocab): with Q/K/V
biases and with add_qkvbias false (then none), opt as a dict and as an
argparse Namespace (refused without --trust-pickle, converted with it).
Teacher-forced logits within 1e-4 of the largest |log-probability| of the
reference (`halformer forward` gives logits; both are compared after
log-softmax), greedy ids identical to the reference's greedy decode; relative
positions are an error naming max_relative_positions.

usage: opennmt_conversion.py HALFORMER_CLI WORK_DIR
"""
import argparse
import math
import os
import subprocess
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "marian"))
from comparison import differences, expect_error, finish  # noqa: E402

CONVERTER = os.path.join(HERE, "..", "..", "tools", "convert_opennmt.py")
D, HEADS, FFN, VOCAB, NEW_TOKENS = 32, 4, 64, 60, 16
TOKENS = ["<unk>", "<blank>", "<s>", "</s>"] + [f"w{i}" for i in range(VOCAB - 4)]  # pad 1, start 2, end 3


class Attention(nn.Module):
    def __init__(self, bias):
        super().__init__()
        for name in ("linear_keys", "linear_values", "linear_query"):
            setattr(self, name, nn.Linear(D, D, bias=bias))
        self.final_linear = nn.Linear(D, D, bias=bias)

    def forward(self, key, value, query, mask):  # mask: True where attention is forbidden
        b, dk = query.shape[0], D // HEADS
        split = lambda x: x.view(b, -1, HEADS, dk).transpose(1, 2)  # noqa: E731
        q = split(self.linear_query(query)) / math.sqrt(dk)
        scores = q @ split(self.linear_keys(key)).transpose(2, 3)
        p = torch.softmax(scores.masked_fill(mask.unsqueeze(1), -float("inf")), dim=-1)
        return self.final_linear((p @ split(self.linear_values(value))).transpose(1, 2).reshape(b, -1, D))


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_1, self.w_2, self.layer_norm = nn.Linear(D, FFN), nn.Linear(FFN, D), nn.LayerNorm(D, eps=1e-6)

    def forward(self, x):
        return x + self.w_2(torch.relu(self.w_1(self.layer_norm(x))))


def embeddings():
    e = nn.Module()
    e.make_embedding = nn.Module()
    e.make_embedding.emb_luts = nn.ModuleList([nn.Embedding(VOCAB, D)])
    return e


def embed(e, ids):
    pos = torch.arange(ids.shape[1], dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, D, 2, dtype=torch.float64) * -(math.log(10000.0) / D))
    pe = torch.zeros(ids.shape[1], D, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return e.make_embedding.emb_luts[0](ids) * math.sqrt(D) + pe


class Reference(nn.Module):
    def __init__(self, bias, layers=2):
        super().__init__()
        self.encoder, self.decoder = nn.Module(), nn.Module()
        self.encoder.embeddings, self.decoder.embeddings = embeddings(), embeddings()
        self.encoder.transformer = nn.ModuleList()
        for _ in range(layers):
            layer = nn.Module()
            layer.self_attn, layer.feed_forward, layer.layer_norm = Attention(bias), FeedForward(), nn.LayerNorm(D, eps=1e-6)
            self.encoder.transformer.append(layer)
        self.decoder.transformer_layers = nn.ModuleList()
        for _ in range(layers):
            layer = nn.Module()
            layer.self_attn, layer.context_attn, layer.feed_forward = Attention(bias), Attention(bias), FeedForward()
            layer.layer_norm_1, layer.layer_norm_2 = nn.LayerNorm(D, eps=1e-6), nn.LayerNorm(D, eps=1e-6)
            self.decoder.transformer_layers.append(layer)
        self.encoder.layer_norm, self.decoder.layer_norm = nn.LayerNorm(D, eps=1e-6), nn.LayerNorm(D, eps=1e-6)
        self.generator = nn.Linear(D, VOCAB)

    def forward(self, src, tgt):  # log-probabilities (batch, tgt_len, vocab)
        src_mask = (src == 1).unsqueeze(1)
        x = embed(self.encoder.embeddings, src)
        for layer in self.encoder.transformer:
            n = layer.layer_norm(x)
            x = layer.feed_forward(layer.self_attn(n, n, n, src_mask) + x)
        memory = self.encoder.layer_norm(x)
        t = tgt.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1).unsqueeze(0)
        y = embed(self.decoder.embeddings, tgt)
        for layer in self.decoder.transformer_layers:
            n = layer.layer_norm_1(y)
            y = layer.self_attn(n, n, n, causal) + y
            n = layer.layer_norm_2(y)
            y = layer.feed_forward(layer.context_attn(memory, memory, n, src_mask) + y)
        return torch.log_softmax(self.generator(self.decoder.layer_norm(y)), dim=-1)


def checkpoint(model, opt):
    state = {k: v.float() for k, v in model.state_dict().items() if not k.startswith("generator.")}
    generator = {k.removeprefix("generator."): v.float() for k, v in model.state_dict().items()
                 if k.startswith("generator.")}
    return {"model": state, "generator": generator, "opt": opt, "vocab": {"src": TOKENS, "tgt": TOKENS}}


def options(bias, **extra):
    o = dict(encoder_type="transformer", decoder_type="transformer", heads=HEADS, layers=2, hidden_size=D,
             transformer_ff=FFN, position_encoding=True, max_relative_positions=0, add_qkvbias=bias,
             self_attn_type="scaled-dot", pos_ffn_activation_fn="relu")
    o.update(extra)
    return o


def reference_greedy(model, rows):
    out = []
    for r in rows:
        src, hyp = torch.tensor([r]), [2]
        with torch.no_grad():
            while len(hyp) <= NEW_TOKENS:
                token = int(model(src, torch.tensor([hyp]))[0, -1].argmax())
                hyp.append(token)
                if token == 3:
                    break
        out.append(hyp[1:])
    return out


def check(cli, name, model, model_dir, work):
    rng = np.random.default_rng(len(name))
    rows = [[int(x) for x in rng.integers(4, VOCAB, size=n)] + [3] for n in (1, 5, 12, 3)]
    text = "".join(" ".join(map(str, r)) + "\n" for r in rows)
    run = subprocess.run([cli, "run", "--model", model_dir, "--max-len", str(NEW_TOKENS), "--threads", "2"],
                         input=text, capture_output=True, text=True)
    if run.returncode != 0:
        return [f"{name}: run failed: {run.stderr}"]
    got = [[int(x) for x in line.split()] for line in run.stdout.splitlines()]
    want = reference_greedy(model, rows)
    failures = differences(f"{name} greedy sentence", got, want)
    width = max(len(r) for r in rows)
    src = np.array([r + [1] * (width - len(r)) for r in rows], dtype=np.int64)
    tgt = np.array([[2] + [int(x) for x in rng.integers(4, VOCAB, size=9)] for _ in rows], dtype=np.int64)
    for n, a in (("src", src), ("tgt", tgt)):
        np.save(os.path.join(work, f"{n}.npy"), a)
    subprocess.run([cli, "forward", "--model", model_dir, "--src", os.path.join(work, "src.npy"), "--tgt",
                    os.path.join(work, "tgt.npy"), "--out-logits", os.path.join(work, "logits.npy"), "--threads", "2"],
                   check=True)
    got_lp = torch.log_softmax(torch.tensor(np.load(os.path.join(work, "logits.npy")), dtype=torch.float64), -1)
    with torch.no_grad():
        want_lp = model(torch.tensor(src), torch.tensor(tgt))
    error = float((got_lp - want_lp).abs().max() / want_lp.abs().max())
    print(f"{name}: greedy {sum(a == b for a, b in zip(got, want))}/{len(rows)} identical; "
          f"log-probabilities error {error:.2e} of the largest")
    if error > 1e-4:
        failures.append(f"{name}: log-probabilities differ by {error:.2e} of the largest (> 1e-4)")
    return failures


def convert(path, out, trust=False):
    return subprocess.run([sys.executable, CONVERTER, path, out] + (["--trust-pickle"] if trust else []),
                          capture_output=True, text=True)


def main():
    cli, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    for bias in (True, False):
        torch.manual_seed(int(bias))
        model = Reference(bias)
        for p in model.parameters():  # decisive logits: wider than PyTorch's init
            nn.init.normal_(p, 0.0, 0.15)
        model = model.double().eval()
        name = f"opennmt qkv bias {bias}"
        path = os.path.join(work, f"bias_{bias}.pt")
        torch.save(checkpoint(model, options(bias)), path)
        out = convert(path, os.path.join(work, f"bias_{bias}"))
        if out.returncode != 0:
            finish(failures + [f"{name}: conversion failed: {out.stderr}"])
        failures += check(cli, name, model, os.path.join(work, f"bias_{bias}"), work)
    path = os.path.join(work, "namespace.pt")
    torch.save(checkpoint(model, argparse.Namespace(**options(False))), path)
    failures += expect_error(convert(path, os.path.join(work, "namespace")), "--trust-pickle",
                             "a pickled Namespace without --trust-pickle")
    out = convert(path, os.path.join(work, "namespace"), trust=True)
    if out.returncode != 0:
        finish(failures + [f"--trust-pickle conversion failed: {out.stderr}"])
    failures += check(cli, "opennmt Namespace opt", model, os.path.join(work, "namespace"), work)
    path = os.path.join(work, "relative.pt")
    torch.save(checkpoint(model, options(False, max_relative_positions=20)), path)
    failures += expect_error(convert(path, os.path.join(work, "relative")), "max_relative_positions",
                             "relative positions")
    finish(failures)


if __name__ == "__main__":
    main()
