"""Shared by the Python benchmarks: read a halformer model directory's
safetensors with numpy (no torch needed), and the sinusoidal positions
halformer uses (sin on even, cos on odd features, as the 2017 paper)."""
import json
import os
import struct

import numpy as np

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=DTYPES[t["dtype"]]).reshape(t["shape"]).copy()
    return out


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def positions(length, d_model):
    pos = np.arange(length, dtype=np.float64)[:, None]
    pair = np.arange(0, d_model, 2, dtype=np.float64)
    angle = pos / np.power(10000.0, pair / d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe.astype(np.float32)


def read_sources(path, batch):
    with open(path) as f:
        rows = [[int(x) for x in line.split()] for line in f if line.strip()]
    if len(rows) < batch:
        raise SystemExit(f"{path} has {len(rows)} sources, fewer than batch {batch}")
    return rows[:batch]


def peak_rss_mb():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
