#!/usr/bin/python3
"""Export a PyTorch sequence-to-sequence Transformer to a halformer model directory.

The directory holds config.json and model.safetensors (the contract in
docs/model-format.md). Any module with the children `src_embed`, `tgt_embed`,
`transformer` (nn.Transformer, batch_first=True) and `generator` (nn.Linear) can
be exported; `Seq2SeqTransformer` below is such a module.

  /usr/bin/python3 tools/export_torch.py --out DIR [--d-model 512 ...] [--seed 0]
    writes a randomly initialised model (handy for demos and benchmarks).

From Python:
  from export_torch import export
  export(model, DIR, pad_id=0, bos_id=1, eos_id=2)
"""
import argparse
import json
import math
import os
import struct
import sys

import torch
from torch import nn


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=512, nhead=8, num_encoder_layers=6,
                 num_decoder_layers=6, dim_feedforward=2048, activation="relu", norm_first=False,
                 layer_norm_eps=1e-5):
        super().__init__()
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward, dropout=0.0,
            activation=activation, batch_first=True, norm_first=norm_first, layer_norm_eps=layer_norm_eps)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.hparams = dict(d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
                            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                            src_vocab=src_vocab, tgt_vocab=tgt_vocab, norm_first=norm_first,
                            activation=activation, layer_norm_eps=layer_norm_eps)

    @staticmethod
    def positions(length, d_model, offset=0, dtype=torch.float32):
        pos = torch.arange(offset, offset + length, dtype=torch.float64).unsqueeze(1)
        pair = torch.arange(0, d_model, 2, dtype=torch.float64)
        angle = pos / torch.pow(10000.0, pair / d_model)
        pe = torch.zeros(length, d_model, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
        return pe.to(dtype)

    def embed(self, table, ids):
        d = self.hparams["d_model"]
        x = table(ids) * math.sqrt(d)
        return x + self.positions(ids.shape[1], d, dtype=x.dtype).to(x.device)

    def encode(self, src, pad_id):
        mask = src == pad_id
        return self.transformer.encoder(self.embed(self.src_embed, src), src_key_padding_mask=mask), mask

    def decode(self, memory, src_mask, tgt):
        t = tgt.shape[1]
        causal = torch.triu(torch.full((t, t), float("-inf"), dtype=memory.dtype), diagonal=1)
        y = self.transformer.decoder(self.embed(self.tgt_embed, tgt), memory, tgt_mask=causal,
                                     memory_key_padding_mask=src_mask)
        return self.generator(y)

    def forward(self, src, tgt, pad_id):
        memory, mask = self.encode(src, pad_id)
        return self.decode(memory, mask, tgt)


def write_safetensors(path, tensors):
    """The safetensors layout: u64 little-endian header size, JSON header, raw data."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous().cpu()
        data = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # align the data to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def export(model, out_dir, pad_id=0, bos_id=1, eos_id=2):
    """Writes config.json and model.safetensors for `model` into out_dir."""
    tr = model.transformer
    enc_layer = tr.encoder.layers[0] if len(tr.encoder.layers) else None
    dec_layer = tr.decoder.layers[0] if len(tr.decoder.layers) else None
    layer = enc_layer or dec_layer
    act = layer.activation
    act_name = getattr(act, "__name__", type(act).__name__).lower()
    if act_name not in ("relu", "gelu"):
        raise ValueError(f"activation {act_name} is not supported (relu or gelu)")
    config = {
        "d_model": tr.d_model,
        "nhead": tr.nhead,
        "num_encoder_layers": len(tr.encoder.layers),
        "num_decoder_layers": len(tr.decoder.layers),
        "dim_feedforward": layer.linear1.out_features,
        "src_vocab": model.src_embed.num_embeddings,
        "tgt_vocab": model.tgt_embed.num_embeddings,
        "norm_first": bool(layer.norm_first),
        "final_norm": tr.encoder.norm is not None and tr.decoder.norm is not None,
        "activation": act_name,
        "layer_norm_eps": layer.norm1.eps,
        "pad_id": pad_id,
        "bos_id": bos_id,
        "eos_id": eos_id,
        "scale_embedding": True,
        "positional_encoding": "sinusoidal",
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), model.state_dict())
    return config


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--src-vocab", type=int, default=1000)
    p.add_argument("--tgt-vocab", type=int, default=1000)
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--nhead", type=int, default=8)
    p.add_argument("--encoder-layers", type=int, default=6)
    p.add_argument("--decoder-layers", type=int, default=6)
    p.add_argument("--d-ff", type=int, default=2048)
    p.add_argument("--activation", choices=["relu", "gelu"], default="relu")
    p.add_argument("--norm-first", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    model = Seq2SeqTransformer(a.src_vocab, a.tgt_vocab, a.d_model, a.nhead, a.encoder_layers, a.decoder_layers,
                               a.d_ff, a.activation, a.norm_first).eval()
    config = export(model, a.out)
    print(f"wrote {a.out}: {json.dumps(config)}")


if __name__ == "__main__":
    sys.exit(main())
