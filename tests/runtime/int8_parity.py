#!/usr/bin/python3
"""halformer's int8 forward pass against PyTorch running the same quantized
arithmetic in float64.

The fixture's model is loaded into tools/export_torch.py's Seq2SeqTransformer and
every GEMM (torch.nn.functional.linear: nn.Linear, and nn.MultiheadAttention's
input and output projections) is replaced by halformer's int8 definition: weights
quantized per output row in float32 as the loader does (step max|w|/127, values
rounded half to even), the input quantized per row (its own step), the integer
products summed exactly (float64 holds them), then scaled by both steps and
biased. The embedding tables are quantized per token's row the same way and used
dequantized. Everything else (LayerNorm, softmax, attention) is PyTorch's. Each
fixture runs twice: with float32 attention keys and values (--kv-cache float32),
and with the float16 ones int8 models keep on the CPU by default (executor.hpp,
default_kv), which the emulation then rounds to float16 likewise (saturating at
+-65504).

Bound: halformer computes activations in float32 (with FMA on AVX2, without on
SSE4.1), so a value within float32's rounding of a .5 boundary can quantize one
step apart from the float64 emulation's. On most rows nothing does: they agree to
4-7e-7 of the rms (Zen 3). But these random-weight fixtures are chaotic (their
int8 and float32 logits differ by 4-70% of the rms), so one flipped step can
move a whole sentence by several % (base_width's last sentence on AVX2: 7%, its
embedding off by one float32 ulp). So per sentence (batch row) the worst error
is taken, and at least half of a fixture's sentences and 80% of all must agree
to 1e-4 of the rms (on a Sapphire Rapids-class Xeon's AVX-512 code two of
base_width's four flip by 9-11%, the other 18 agree to 2-6e-7): a wiring error,
a wrong step or layout, moves every sentence (and float32 is 2-70% of the rms
away from every one). float16 keys and values add roundings the float64
emulation can take one float16 step apart (a float32 value within 2^-24 of a
float16 tie: ~1 in 8000 values), and base_width, at d_model 512, has enough of
them that every sentence flips (7-11%, the others agree to 1-5e-7 of the rms):
with float16 the 80% over all sentences is required, not the half per fixture.

usage: int8_parity.py HALFORMER_CLI FIXTURE_DIR...
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from export_torch import Seq2SeqTransformer  # noqa: E402

PAD = 0
BOUND = 1e-4


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: torch.from_numpy(np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4")
                                .reshape(v["shape"]).copy()) for k, v in header.items() if k != "__metadata__"}


def quantize_rows_f32(w):
    """The loader's quantization, in float32: (int values as float64, steps as float64)."""
    w = w.float()
    step = w.abs().amax(dim=-1, keepdim=True) / 127
    inverse = torch.where(step > 0, 1 / step, torch.zeros_like(step))
    return torch.clamp(torch.round(w * inverse), -127, 127).double(), step.double()


def quantized_linear(x, w, b=None):
    qw, sw = quantize_rows_f32(w)
    sx = x.abs().amax(dim=-1, keepdim=True) / 127
    inverse = torch.where(sx > 0, 1 / sx, torch.zeros_like(sx))
    qx = torch.clamp(torch.round(x * inverse), -127, 127)
    y = (qx @ qw.t()) * sx * sw.t()
    return y if b is None else y + b


def float16_keys_and_values(module, rounding):
    """While `module` (an nn.MultiheadAttention) runs and ROUND_KV is set, its input
    projections' keys and values are rounded to float16, as halformer's
    kv_to_float16 rounds them."""
    def rounded(*args, **kwargs):
        q, k, v = in_projection_packed(*args, **kwargs)
        f16 = [t.clamp(-65504, 65504).half().to(t.dtype) for t in (k, v)]
        return (q, *f16)

    def enter(*_):
        rounding.append(rounded if ROUND_KV[0] else in_projection_packed)

    def leave(*_):
        rounding.pop()  # returns None: the module's output stays its own

    module.register_forward_pre_hook(enter)
    module.register_forward_hook(leave)


in_projection_packed = F._in_projection_packed
rounding_stack = []
ROUND_KV = [False]


def in_projection(*args, **kwargs):
    return (rounding_stack[-1] if rounding_stack else in_projection_packed)(*args, **kwargs)


def int8_model(directory):
    config = json.load(open(os.path.join(directory, "config.json")))
    model = Seq2SeqTransformer(config["src_vocab"], config["tgt_vocab"], config["d_model"], config["nhead"],
                               config["num_encoder_layers"], config["num_decoder_layers"],
                               config["dim_feedforward"], config["activation"], config["norm_first"],
                               config["layer_norm_eps"])
    model.load_state_dict(read_safetensors(os.path.join(directory, "model.safetensors")), strict=False)
    with torch.no_grad():
        for table in (model.src_embed, model.tgt_embed):
            q, step = quantize_rows_f32(table.weight)
            table.weight.copy_(q * step)
    for layer in model.transformer.decoder.layers:
        for attention in (layer.self_attn, layer.multihead_attn):
            float16_keys_and_values(attention, rounding_stack)
    return model.double().eval()


def compare(cli, d, kv_cache, want, float32):
    """halformer int8 with `kv_cache` keys and values against the emulation `want`:
    (sentences within BOUND, sentences, per-fixture verdict)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "int8.npy")
        subprocess.run([cli, "forward", "--model", d, "--src", os.path.join(d, "src.npy"), "--tgt",
                        os.path.join(d, "tgt.npy"), "--out-logits", path, "--compute-type", "int8",
                        "--kv-cache", kv_cache], check=True)
        got = torch.from_numpy(np.load(path)).double()
    rms = want.pow(2).mean().sqrt()
    per_row = [((got[b] - want[b]).abs().max() / rms).item() for b in range(want.shape[0])]
    float_row = [((float32[b] - want[b]).abs().max() / rms).item() for b in range(want.shape[0])]
    agree = sum(e <= BOUND for e in per_row)
    ok = (2 * agree >= len(per_row) or kv_cache == "float16") and min(float_row) > 10 * BOUND
    print(f"{os.path.basename(d)}, {kv_cache} keys and values: int8 |halformer - PyTorch emulation| / rms per "
          f"sentence {' '.join(f'{e:.1e}' for e in per_row)} ({agree} within {BOUND}); float32 "
          f"{' '.join(f'{e:.1e}' for e in float_row)}: {'ok' if ok else 'FAILED'}")
    return agree, len(per_row), ok


def main():
    cli, fixtures = sys.argv[1], sys.argv[2:]
    F.linear = quantized_linear  # nn.Linear and F.multi_head_attention_forward call it through the module
    F._in_projection_packed = in_projection  # likewise
    torch.set_grad_enabled(True)  # parameters needing grad keep PyTorch off its fused fast paths
    failed = False
    for kv_cache in ("float32", "float16"):
        ROUND_KV[0] = kv_cache == "float16"
        agreed, sentences = 0, 0
        for d in fixtures:
            src, tgt = np.load(os.path.join(d, "src.npy")), np.load(os.path.join(d, "tgt.npy"))
            want = int8_model(d)(torch.from_numpy(src), torch.from_numpy(tgt), PAD).detach()
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "float32.npy")
                subprocess.run([cli, "forward", "--model", d, "--src", os.path.join(d, "src.npy"), "--tgt",
                                os.path.join(d, "tgt.npy"), "--out-logits", path, "--compute-type", "float32"],
                               check=True)
                float32 = torch.from_numpy(np.load(path)).double()
            agree, n, ok = compare(cli, d, kv_cache, want, float32)
            agreed, sentences, failed = agreed + agree, sentences + n, failed or not ok
        overall = 5 * agreed >= 4 * sentences
        print(f"{kv_cache}: {agreed} of {sentences} sentences within {BOUND}: {'ok' if overall else 'FAILED'}")
        failed = failed or not overall
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
