#!/usr/bin/env python3
"""CTranslate2 baseline (from PyPI, run with the project venv's python): the same
weights converted with CTranslate2's Python spec API into a float32 model, then
translated with the same threads.

  ct2_bench.py convert MODEL_DIR CT2_DIR
  ct2_bench.py e2e CT2_DIR SOURCES --mode greedy|beam|sample --batch B [--beam K]
               [--new-tokens N] [--threads T] [--samples S] [--sampling-topk K]

Token id i is the vocabulary word "w<i>" (0-3: <blank> <s> </s> <unk>), so outputs
map back to ids and compare with halformer's and PyTorch's."""
import argparse
import json
import os
import sys
import time

import ctranslate2
import numpy as np
from ctranslate2.specs import common_spec, transformer_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_io import peak_rss_mb, positions, read_config, read_safetensors, read_sources  # noqa: E402

SPECIAL = ["<blank>", "<s>", "</s>", "<unk>"]


def word(i):
    return SPECIAL[i] if i < 4 else f"w{i}"


def convert(model_dir, out_dir):
    c = read_config(model_dir)
    if not c["norm_first"] or not c["final_norm"] or c["activation"] != "relu":
        raise SystemExit("the CTranslate2 baseline is built for pre-norm ReLU models with final norms")
    w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    d = c["d_model"]
    spec = transformer_spec.TransformerSpec.from_config(
        (c["num_encoder_layers"], c["num_decoder_layers"]), c["nhead"], pre_norm=True,
        activation=common_spec.Activation.RELU)
    spec.config.layer_norm_epsilon = c["layer_norm_eps"]

    def linear(s, prefix):
        s.weight, s.bias = w[prefix + ".weight"], w[prefix + ".bias"]

    def norm(s, prefix):
        s.gamma, s.beta = w[prefix + ".weight"], w[prefix + ".bias"]

    def self_attention_and_ffn(layer, p, ffn_norm):
        att = layer.self_attention
        att.linear[0].weight, att.linear[0].bias = w[p + "self_attn.in_proj_weight"], w[p + "self_attn.in_proj_bias"]
        linear(att.linear[1], p + "self_attn.out_proj")
        norm(att.layer_norm, p + "norm1")
        linear(layer.ffn.linear_0, p + "linear1")
        linear(layer.ffn.linear_1, p + "linear2")
        norm(layer.ffn.layer_norm, p + ffn_norm)

    enc, dec = spec.encoder, spec.decoder
    enc.embeddings[0].weight = w["src_embed.weight"]
    dec.embeddings.weight = w["tgt_embed.weight"]
    enc.scale_embeddings = dec.scale_embeddings = True
    enc.position_encodings.encodings = dec.position_encodings.encodings = positions(1024, d)
    norm(enc.layer_norm, "transformer.encoder.norm")
    norm(dec.layer_norm, "transformer.decoder.norm")
    linear(dec.projection, "generator")
    for i, layer in enumerate(enc.layer):
        self_attention_and_ffn(layer, f"transformer.encoder.layers.{i}.", "norm2")
    for i, layer in enumerate(dec.layer):
        p = f"transformer.decoder.layers.{i}."
        self_attention_and_ffn(layer, p, "norm3")
        qkv_w, qkv_b = w[p + "multihead_attn.in_proj_weight"], w[p + "multihead_attn.in_proj_bias"]
        layer.attention.linear[0].weight, layer.attention.linear[0].bias = qkv_w[:d], qkv_b[:d]
        layer.attention.linear[1].weight, layer.attention.linear[1].bias = qkv_w[d:], qkv_b[d:]
        linear(layer.attention.linear[2], p + "multihead_attn.out_proj")
        norm(layer.attention.layer_norm, p + "norm2")
    spec.register_source_vocabulary([word(i) for i in range(c["src_vocab"])])
    spec.register_target_vocabulary([word(i) for i in range(c["tgt_vocab"])])
    spec.validate()
    spec.optimize(quantization="float32")
    os.makedirs(out_dir, exist_ok=True)
    spec.save(out_dir)
    print(f"wrote {out_dir} (CTranslate2 {ctranslate2.__version__}, float32)")


def e2e(a):
    t0 = time.perf_counter()
    tr = ctranslate2.Translator(a.model, device="cpu", compute_type=a.compute_type, inter_threads=1,
                                intra_threads=a.threads)
    load_s = time.perf_counter() - t0
    rows = [[word(i) for i in r] for r in read_sources(a.sources, a.batch)]
    k = a.beam if a.mode == "beam" else 1

    # sample: top-k 10 or --sampling-topk (bench_e2e's), EOS banned before the last token, so every
    # system draws the same number of tokens.
    sampling = dict(sampling_topk=a.sampling_topk) if a.mode == "sample" else {}
    ctranslate2.set_random_seed(1)

    def run(n):
        return tr.translate_batch(rows, beam_size=k, max_decoding_length=n, max_batch_size=0,
                                  return_scores=False, min_decoding_length=n - 1 if sampling else 0, **sampling)

    run(2)  # warm-up
    secs, out = [], None
    for s in range(a.samples):
        t1 = time.perf_counter()
        r = run(a.new_tokens)
        secs.append(time.perf_counter() - t1)
        if s == 0:
            out = r
    secs.sort()
    ids = {word(i): i for i in range(4)}
    first = [[ids.get(t, None) if t in ids else int(t[1:]) for t in x.hypotheses[0]] for x in out]
    tokens = sum(len(f) for f in first)
    med = secs[len(secs) // 2]
    print(json.dumps({"system": "ctranslate2", "mode": a.mode, "batch": a.batch, "beam": k, "median_s": med,
                      "min_s": secs[0], "max_s": secs[-1], "samples": a.samples, "tokens": tokens,
                      "tokens_per_s": tokens / med, "peak_rss_mb": peak_rss_mb(), "load_s": load_s,
                      "threads": a.threads, "ctranslate2": ctranslate2.__version__, "first_tokens": first}))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["convert", "e2e"])
    p.add_argument("model")
    p.add_argument("arg")
    p.add_argument("--mode", default="greedy", choices=["greedy", "beam", "sample"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--samples", type=int, default=3)
    p.add_argument("--sampling-topk", type=int, default=10, help="sample mode: 0 is the whole vocabulary")
    p.add_argument("--compute-type", default="float32", choices=["float32", "int8_float32"])
    a = p.parse_args()
    if a.what == "convert":
        convert(a.model, a.arg)
    else:
        a.sources = a.arg
        e2e(a)


if __name__ == "__main__":
    main()
