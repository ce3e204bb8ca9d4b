#!/usr/bin/env python3
"""Converts an OpenNMT-py transformer checkpoint (encoder_type/decoder_type
"transformer", as `onmt_train` saves it: model, generator, opt, vocab) into
halformer's own format (docs/model-format.md): pre-norm layers with final norms,
LayerNorm epsilon 1e-6, embeddings times sqrt(d_model) plus the paper's
interleaved sinusoids from position 0, a generator with its bias. Q, K and V go
into one in_proj per attention (zeros where OpenNMT-py has no bias:
add_qkvbias false). The special ids come from the checkpoint's target
vocabulary (<blank> the pad, <s> the start, </s> the end). Token ids in, token
ids out: the tokenization stays the user's (`halformer run`).

The checkpoint is read with torch's `weights_only` loader where it allows it;
OpenNMT-py stores its options as an argparse Namespace, which that loader refuses:
the converter then says so and stops, unless `--trust-pickle` allows the full
unpickler (it runs code from the file: only for checkpoints you trust). Options
this runtime does not have (relative positions, no positions, RMS norm, rotary
embeddings, a parallel residual, grouped K/V heads) are errors naming the option.

usage: convert_opennmt.py CHECKPOINT.pt OUT_DIR [--trust-pickle]
       (python with torch: .venv-ref)
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convert_fairseq import command_line  # noqa: E402
from export_torch import write_safetensors  # noqa: E402

# Options and the values halformer runs (None: an older checkpoint without the option).
SUPPORTED = {"max_relative_positions": (0, None), "position_encoding": (True, None), "layer_norm": ("standard", None),
             "parallel_residual": (False, None), "num_kv": (0, None), "self_attn_type": ("scaled-dot", None),
             "encoder_type": ("transformer", None), "decoder_type": ("transformer", None),
             "pos_ffn_activation_fn": ("relu", "gelu", None)}


def options_of(checkpoint):
    opt = checkpoint.get("opt")
    if opt is None:
        raise SystemExit("convert_opennmt: the checkpoint has no opt")
    opts = dict(opt) if isinstance(opt, dict) else dict(vars(opt))
    for key, allowed in SUPPORTED.items():
        if opts.get(key) not in allowed:
            raise SystemExit(f"convert_opennmt: {key} = {opts[key]!r} is not supported by halformer "
                             f"({' or '.join(repr(v) for v in allowed if v is not None)})")
    if "heads" not in opts:
        raise SystemExit("convert_opennmt: opt has no heads")
    return opts


def special_ids(vocab):
    tokens = vocab["tgt"] if isinstance(vocab, dict) else None
    if not isinstance(tokens, (list, tuple)):
        raise SystemExit("convert_opennmt: the checkpoint's vocab['tgt'] is not a token list (OpenNMT-py >= 3)")
    ids = {}
    for name, token in (("pad_id", "<blank>"), ("bos_id", "<s>"), ("eos_id", "</s>")):
        if token not in tokens:
            raise SystemExit(f"convert_opennmt: the target vocabulary has no {token}")
        ids[name] = tokens.index(token)
    return ids


def attention(out, to, state, frm, d):
    """OpenNMT-py's linear_query/keys/values and final_linear -> an in_proj and out_proj."""
    out[to + "in_proj_weight"] = torch.cat([state[frm + f"linear_{p}.weight"] for p in ("query", "keys", "values")])
    out[to + "in_proj_bias"] = torch.cat([state.get(frm + f"linear_{p}.bias", torch.zeros(d))
                                          for p in ("query", "keys", "values")])
    out[to + "out_proj.weight"] = state[frm + "final_linear.weight"]
    out[to + "out_proj.bias"] = state.get(frm + "final_linear.bias", torch.zeros(d))


def feed_forward(out, to, state, frm, d):
    for mine, theirs in (("linear1", "w_1"), ("linear2", "w_2")):
        w = state[frm + f"{theirs}.weight"]
        out[to + mine + ".weight"] = w
        out[to + mine + ".bias"] = state.get(frm + f"{theirs}.bias", torch.zeros(w.shape[0]))


def norm(out, to, state, frm):
    out[to + ".weight"], out[to + ".bias"] = state[frm + ".weight"], state[frm + ".bias"]


def converted(checkpoint, opts):
    state, generator = checkpoint["model"], checkpoint["generator"]
    src = state["encoder.embeddings.make_embedding.emb_luts.0.weight"]
    tgt = state["decoder.embeddings.make_embedding.emb_luts.0.weight"]
    d = src.shape[1]
    out = {"src_embed.weight": src, "tgt_embed.weight": tgt, "generator.weight": generator["weight"],
           "generator.bias": generator.get("bias", torch.zeros(generator["weight"].shape[0]))}
    layers = {side: len({k.split(".")[2] for k in state if k.startswith(f"{side}.transformer")})
              for side in ("encoder", "decoder")}
    for i in range(layers["encoder"]):
        frm, to = f"encoder.transformer.{i}.", f"transformer.encoder.layers.{i}."
        attention(out, to + "self_attn.", state, frm + "self_attn.", d)
        norm(out, to + "norm1", state, frm + "layer_norm")
        feed_forward(out, to, state, frm + "feed_forward.", d)
        norm(out, to + "norm2", state, frm + "feed_forward.layer_norm")
    for i in range(layers["decoder"]):
        frm, to = f"decoder.transformer_layers.{i}.", f"transformer.decoder.layers.{i}."
        attention(out, to + "self_attn.", state, frm + "self_attn.", d)
        attention(out, to + "multihead_attn.", state, frm + "context_attn.", d)
        for k in (1, 2):
            norm(out, to + f"norm{k}", state, frm + f"layer_norm_{k}")
        feed_forward(out, to, state, frm + "feed_forward.", d)
        norm(out, to + "norm3", state, frm + "feed_forward.layer_norm")
    norm(out, "transformer.encoder.norm", state, "encoder.layer_norm")
    norm(out, "transformer.decoder.norm", state, "decoder.layer_norm")
    heads = opts["heads"]
    config = dict(d_model=d, nhead=heads, num_encoder_layers=layers["encoder"], num_decoder_layers=layers["decoder"],
                  dim_feedforward=out["transformer.encoder.layers.0.linear1.weight"].shape[0] if layers["encoder"]
                  else out["transformer.decoder.layers.0.linear1.weight"].shape[0],
                  src_vocab=src.shape[0], tgt_vocab=tgt.shape[0], norm_first=True, final_norm=True,
                  activation=opts.get("pos_ffn_activation_fn") or "relu", layer_norm_eps=1e-6,
                  scale_embedding=True, positional_encoding="sinusoidal", **special_ids(checkpoint.get("vocab")))
    return config, out


def main():
    a, checkpoint = command_line(__doc__, "convert_opennmt")
    config, tensors = converted(checkpoint, options_of(checkpoint))
    os.makedirs(a.out_dir, exist_ok=True)
    with open(os.path.join(a.out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(a.out_dir, "model.safetensors"), tensors)
    print(f"{a.out_dir}: halformer directory, {len(tensors)} tensors")


if __name__ == "__main__":
    main()
