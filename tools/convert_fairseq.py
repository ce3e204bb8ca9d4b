#!/usr/bin/env python3
"""Converts a fairseq translation checkpoint (`transformer`, `transformer_wmt_en_de`,
`transformer_vaswani_wmt_en_de_big`, or any `transformer` variant of the same
layers) into a directory halformer loads, in a format transformers also reads:
- post-norm layers (fairseq's default): an FSMT directory (`model_type` "fsmt",
  transformers' port of fairseq's transformer): separate source and target
  tables, an output projection;
- pre-norm layers (`--encoder-normalize-before` and `--decoder-normalize-before`)
  with one table (`--share-all-embeddings`): an M2M100 directory (`model_type`
  "m2m_100"), fairseq's pre-norm transformer with final norms.
Both keep fairseq's positions (sinusoids from pad + 1, sines then cosines,
frequencies 10000^(-i / (d/2 - 1))) and its dictionary's ids (<s> 0, <pad> 1,
</s> 2, <unk> 3; decoding starts from </s>). Token ids in, token ids out: the
model's BPE and dictionary stay the user's (`halformer run`).

The checkpoint is read with torch's `weights_only` loader where it allows it.
fairseq stores its options as an argparse Namespace (`args`) or an omegaconf
config (`cfg`), which that loader refuses: the converter then says so and stops,
unless `--trust-pickle` allows the full unpickler (it runs code from the file:
only for checkpoints you trust). Features this runtime does not have (learned
positions, layernorm_embedding, no positions, cross_self_attention, mixed
normalize_before) are errors naming the option.

usage: convert_fairseq.py CHECKPOINT.pt OUT_DIR [--trust-pickle]
       (python with torch and safetensors: .venv-ref)
"""
import argparse
import json
import os
import pickle
import sys

import torch
from safetensors.torch import save_file

# fairseq's `transformer` defaults (base_architecture) and the two named WMT ones.
ARCHITECTURES = {
    "transformer": dict(encoder_embed_dim=512, encoder_ffn_embed_dim=2048, encoder_layers=6,
                        encoder_attention_heads=8),
    "transformer_wmt_en_de": dict(encoder_embed_dim=512, encoder_ffn_embed_dim=2048, encoder_layers=6,
                                  encoder_attention_heads=8),
    "transformer_vaswani_wmt_en_de_big": dict(encoder_embed_dim=1024, encoder_ffn_embed_dim=4096, encoder_layers=6,
                                              encoder_attention_heads=16),
}
UNSUPPORTED = {"encoder_learned_pos": "learned positions", "decoder_learned_pos": "learned positions",
               "layernorm_embedding": "a LayerNorm after the embeddings",
               "no_token_positional_embeddings": "no positions", "cross_self_attention": "cross+self attention",
               "no_cross_attention": "a decoder without cross-attention"}


def load_checkpoint(path, trust_pickle, tool="convert_fairseq"):
    """The checkpoint through torch's weights_only loader, or the full unpickler if trusted."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if not trust_pickle:
            raise SystemExit(f"{tool}: {path} holds pickled objects besides tensors (the training tool's options: "
                             f"an argparse Namespace or an omegaconf config), which torch's weights_only loader "
                             f"refuses ({str(e).splitlines()[0]}). Rerun with --trust-pickle to read it with the "
                             f"full unpickler, which runs code from the file: only for a checkpoint you trust.")
    print(f"{tool}: reading with the full unpickler (--trust-pickle)", file=sys.stderr)
    return torch.load(path, map_location="cpu", weights_only=False)


def options_of(checkpoint):
    """The model's options: cfg['model'] (fairseq >= 0.10) or args, as a dict."""
    cfg = checkpoint.get("cfg")
    model = cfg.get("model") if cfg is not None else None
    if model is None:
        model = checkpoint.get("args")
    if model is None:
        raise SystemExit("convert_fairseq: the checkpoint has neither cfg['model'] nor args")
    opts = dict(vars(model)) if hasattr(model, "__dict__") and not isinstance(model, dict) else dict(model)
    arch = opts.get("arch", opts.get("_name", "transformer"))
    if arch not in ARCHITECTURES:
        raise SystemExit(f"convert_fairseq: arch '{arch}' is not supported ({', '.join(ARCHITECTURES)})")
    for key, value in ARCHITECTURES[arch].items():
        opts.setdefault(key, value)
        opts.setdefault(key.replace("encoder", "decoder"), opts[key])
    for key, what in UNSUPPORTED.items():
        if opts.get(key):
            raise SystemExit(f"convert_fairseq: {key} ({what}) is not supported by halformer")
    if opts.get("activation_fn", "relu") not in ("relu", "gelu"):
        raise SystemExit(f"convert_fairseq: activation_fn '{opts['activation_fn']}' is not supported (relu, gelu)")
    return arch, opts


def common_config(opts):
    d = opts["encoder_embed_dim"]
    for side in ("encoder", "decoder"):
        if opts[f"{side}_embed_dim"] != d or opts[f"{side}_attention_heads"] != opts["encoder_attention_heads"] or \
                opts[f"{side}_ffn_embed_dim"] != opts["encoder_ffn_embed_dim"]:
            raise SystemExit(f"convert_fairseq: the {side}'s width, heads or FFN differ from the encoder's")
    return dict(d_model=d, encoder_attention_heads=opts["encoder_attention_heads"],
                decoder_attention_heads=opts["encoder_attention_heads"], encoder_layers=opts["encoder_layers"],
                decoder_layers=opts["decoder_layers"], encoder_ffn_dim=opts["encoder_ffn_embed_dim"],
                decoder_ffn_dim=opts["encoder_ffn_embed_dim"], activation_function=opts.get("activation_fn", "relu"),
                scale_embedding=not opts.get("no_scale_embedding", False),
                max_position_embeddings=max(opts.get("max_source_positions", 1024),
                                            opts.get("max_target_positions", 1024)),
                # fairseq's SequenceGenerator never emits the pad and ends with EOS at the last step
                pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
                bad_words_ids=[[1]])


def converted(opts, state):
    """(config.json, tensors) in FSMT's or M2M100's names."""
    before = (bool(opts.get("encoder_normalize_before")), bool(opts.get("decoder_normalize_before")))
    if before[0] != before[1]:
        raise SystemExit("convert_fairseq: encoder_normalize_before and decoder_normalize_before differ")
    src, tgt = state["encoder.embed_tokens.weight"], state["decoder.embed_tokens.weight"]
    shared_output = opts.get("share_decoder_input_output_embed") or opts.get("share_all_embeddings") or \
        "decoder.output_projection.weight" not in state
    config = common_config(opts)
    tensors = {}
    for name, t in state.items():
        if name.endswith((".version", "_float_tensor")) or ".embed_positions." in name:
            continue  # bookkeeping and the sinusoid's cache: halformer computes positions
        tensors["model." + name] = t
    if before[0]:
        if not opts.get("share_all_embeddings") and not torch.equal(src, tgt):
            raise SystemExit("convert_fairseq: pre-norm models convert with one table (--share-all-embeddings)")
        config.update(model_type="m2m_100", vocab_size=src.shape[0], tie_word_embeddings=bool(shared_output))
        tensors["model.shared.weight"] = src
        for side in ("encoder", "decoder"):
            tensors.pop(f"model.{side}.embed_tokens.weight")
        if not shared_output:
            tensors["lm_head.weight"] = tensors.pop("model.decoder.output_projection.weight")
    else:
        config.update(model_type="fsmt", src_vocab_size=src.shape[0], tgt_vocab_size=tgt.shape[0],
                      tie_word_embeddings=bool(shared_output), langs=["src", "tgt"])
        if shared_output:
            tensors["model.decoder.output_projection.weight"] = tgt
    return config, tensors


def write(out_dir, config, tensors):
    os.makedirs(out_dir, exist_ok=True)
    unique, seen = {}, {}
    for name, t in tensors.items():  # one copy per storage: tied tables once
        storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        key = (storage.data_ptr(), t.storage_offset(), tuple(t.shape))
        if key not in seen or config["model_type"] == "fsmt":  # FSMT's loader wants every name
            seen[key] = name
            unique[name] = t.detach().to(torch.float32).contiguous().clone()
    save_file(unique, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"{out_dir}: {config['model_type']} directory, {len(unique)} tensors")


def command_line(doc, tool):
    """CHECKPOINT OUT_DIR [--trust-pickle]: the parsed arguments and the checkpoint."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out_dir")
    ap.add_argument("--trust-pickle", action="store_true", help="read a checkpoint the weights_only loader refuses")
    a = ap.parse_args()
    return a, load_checkpoint(a.checkpoint, a.trust_pickle, tool)


def main():
    a, checkpoint = command_line(__doc__, "convert_fairseq")
    arch, opts = options_of(checkpoint)
    config, tensors = converted(opts, checkpoint["model"])
    print(f"convert_fairseq: arch {arch}")
    write(a.out_dir, config, tensors)


if __name__ == "__main__":
    main()
