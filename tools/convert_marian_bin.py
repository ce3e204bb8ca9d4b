#!/usr/bin/env python3
"""Converts a MarianMT checkpoint's pytorch_model.bin into model.safetensors beside it,
the file `halformer` reads.

The checkpoint is read with torch's `weights_only` loader (tensors only, no code
runs). Tied tensors (one storage under several names: the shared embedding, the
encoder's and decoder's embed_tokens, lm_head) are written once, under the first of
their names in the order transformers keeps them (model.shared.weight first); the
loader finds a tied weight under any of them. Everything is written as float32.

usage: convert_marian_bin.py MODEL_DIR   (python with torch and safetensors: .venv-ref)
"""
import os
import sys

import torch
from safetensors.torch import save_file

PREFERRED = ["model.shared.weight", "model.decoder.embed_tokens.weight", "model.encoder.embed_tokens.weight",
             "lm_head.weight"]


def convert(model_dir):
    source = os.path.join(model_dir, "pytorch_model.bin")
    if not os.path.exists(source):
        raise SystemExit(f"convert_marian_bin: {source} does not exist")
    state = torch.load(source, map_location="cpu", weights_only=True)
    order = [k for k in PREFERRED if k in state] + sorted(k for k in state if k not in PREFERRED)
    tensors, seen = {}, {}
    for name in order:
        t = state[name]
        key = (t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr(),
               t.storage_offset(), tuple(t.shape))
        if key in seen:
            continue  # a tied tensor, already written under seen[key]
        seen[key] = name
        tensors[name] = t.detach().to(torch.float32).contiguous()
    target = os.path.join(model_dir, "model.safetensors")
    save_file(tensors, target, metadata={"format": "pt"})
    print(f"{target}: {len(tensors)} tensors ({len(state) - len(tensors)} tied names left out)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    convert(sys.argv[1])
