#!/usr/bin/env python3
"""halformer's benchmark, one command (see bench/README.md):

    .venv/bin/python bench/run.py [--out DIR] [--threads 2] [--quick | --smoke] [--full] [--isa avx2]

On this machine, in one run: machine limits (FMA and dot-product peaks, memory
bandwidth), every kernel at Transformer-base shapes against oneDNN's matmul of
its type and oneDNN and OpenBLAS sgemm (GEMM-shaped kernels) and PyTorch nn.MultiheadAttention (attention block), and end-to-end
encoding and greedy / beam-4 decoding against PyTorch nn.Transformer and
CTranslate2 with the same weights and threads. Writes a markdown report, CSV, JSON
and SVG charts into --out (default bench/results/<cpu>, one directory per CPU kind,
e.g. amd-epyc-zen2-avx2), with the machine's state and the exact commands.
--smoke runs every step once at the smallest size (CI: catches breakage, not speed).
--isa avx2 measures an AVX-512 CPU as an AVX2-only one would run: every system
capped at AVX2 (ISA_CAP below), its report in its own directory.

Measurement: every number is a median with min-max over samples; kernels and
their sgemm baselines are interleaved sample by sample in one process; the
end-to-end systems run in separate processes (peak RSS is per process), the fast
ones twice in alternating order; thread counts are pinned to --threads."""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from amx_bench import kernel_peak, measure_amx_against_vnni
from cpu_kind import cpu_kind
from report import write_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("HALFORMER_BUILD_DIR", "build"))
BIN = os.path.join(BUILD, "bin")
TORCH_PY = "/usr/bin/python3"  # Debian's python3-torch
VENV_PY = os.path.join(ROOT, ".venv", "bin", "python")
COMMANDS = []


# What caps each system at AVX2 (--isa avx2): halformer's dispatch, CTranslate2's
# own kernels, and oneDNN (CTranslate2's GEMMs and the sgemm baseline), which
# otherwise take AVX-512 where the CPU has it even though CTranslate2 keeps its
# own kernels at AVX2 by default (DNNL_ is the older oneDNN's name, Debian's);
# OpenBLAS's core type (the other baseline); PyTorch's kernels and its MKL.
ISA_CAP = {"avx2": {"HALFORMER_ISA": "avx2", "CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                    "DNNL_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2",
                    "MKL_ENABLE_INSTRUCTIONS": "AVX2"}}


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, env=None, lines=False):
    COMMANDS.append(" ".join(cmd).replace(ROOT + os.sep, ""))  # recorded relative to the repository
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    if lines:
        return [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    return json.loads(p.stdout.strip().splitlines()[-1])


def machine_state(threads):
    def sh(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip(),
        "cores": os.cpu_count(),
        "threads": threads,
        "memory": sh("grep MemTotal /proc/meminfo | awk '{print $2/1048576 \" GiB\"}'"),
        "kernel": platform.release(),
        "governor": sh("cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null") or "n/a (VM)",
        "loadavg_before": os.getloadavg(),
        "git": sh(f"git -C {ROOT} rev-parse --short HEAD"),
        "halide": sh(f"{VENV_PY} -c 'import importlib.metadata as m; print(m.version(\"halide\"))'"),
        "torch": sh(f"{TORCH_PY} -c 'import torch; print(torch.__version__)'"),
        "ctranslate2": sh(f"{VENV_PY} -c 'import ctranslate2; print(ctranslate2.__version__)'"),
    }


def combine(stats):
    """Several runs' {median, min, max} -> median of medians, overall min and max."""
    key = "median_ms" if "median_ms" in stats[0] else "median_s"
    lo, hi = key.replace("median", "min"), key.replace("median", "max")
    return {key: statistics.median(s[key] for s in stats), lo: min(s[lo] for s in stats),
            hi: max(s[hi] for s in stats), "runs": len(stats)}


def parse_args():
    """The options, the CPU kind named in the results' directory, and the ISA cap
    applied to every child process."""
    p = argparse.ArgumentParser()
    p.add_argument("--out", help="results directory (default: bench/results/<cpu kind>)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--quick", action="store_true", help="fewer samples and cases (a smoke run)")
    p.add_argument("--full", action="store_true", help="also PyTorch beam-4 at batch 32 (~10 minutes alone)")
    p.add_argument("--smoke", action="store_true", help="every step once, at the smallest size (CI)")
    p.add_argument("--isa", choices=sorted(ISA_CAP), help="cap every system at this ISA (an AVX-512 CPU as an "
                   "AVX2-only one would run)")
    a = p.parse_args()
    kind, kind_text = cpu_kind()
    if a.isa:
        if a.isa == "avx2" and not kind.endswith("avx512"):
            raise SystemExit("--isa avx2 caps an AVX-512 CPU; this one runs AVX2 or less already: run without it")
        os.environ.update(ISA_CAP[a.isa])  # every child process: kernels, baselines, CTranslate2
        kind, kind_text = f"{kind}-capped-{a.isa}", f"{kind_text}, every system capped at {a.isa.upper()}"
    a.out = a.out or os.path.join(ROOT, "bench", "results", kind)
    os.makedirs(a.out, exist_ok=True)
    return a, kind, kind_text


def benchmark_model():
    """The Transformer-base benchmark model (made once per build directory) and its
    CTranslate2 conversion: (model, ct2_model, sources)."""
    model = os.path.join(BUILD, "bench-model")
    ct2_model = os.path.join(BUILD, "bench-model-ct2")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        log("exporting the Transformer-base benchmark model (random weights, vocab 32000)")
        subprocess.run([TORCH_PY, os.path.join(ROOT, "bench", "make_model.py"), model, "--src-len", "128"],
                       check=True)
    if not os.path.exists(os.path.join(ct2_model, "model.bin")):
        log("converting it for CTranslate2")
        subprocess.run([VENV_PY, os.path.join(ROOT, "bench", "ct2_bench.py"), "convert", model, ct2_model],
                       check=True)
    return model, ct2_model, os.path.join(model, "sources.txt")


def kernel_row(kernel, phase, rows, limits, fma_peak, bw):
    """One kernel at one phase over its rounds: medians, rates, % of its limit, the peers' ratios."""
    k = {"kernel": kernel, "phase": phase, "flops": rows[0]["flops"], "bytes": rows[0]["bytes"],
         "activation_bytes": rows[0].get("activation_bytes", 0),
         "compute_bound": rows[0]["compute_bound"], "halformer": combine([x["halformer"] for x in rows]),
         "isa": rows[0].get("isa")}
    for base in ("onednn_matmul", "onednn_fused", "onednn_sgemm", "openblas_sgemm"):
        if base in rows[0]:
            k[base] = combine([x[base] for x in rows])
    if "onednn_matmul" in rows[0]:
        k["onednn_matmul"].update(type=rows[0]["onednn_matmul"]["type"], impl=rows[0]["onednn_matmul"]["impl"])
    if "onednn_fused" in rows[0]:
        k["onednn_fused"]["impl"] = rows[0]["onednn_fused"]["impl"]
    ms = k["halformer"]["median_ms"]
    k["gflops"] = k["flops"] / ms / 1e6
    k["gbps"] = k["bytes"] / ms / 1e6
    peak, k["peak_of"] = kernel_peak(kernel, k["isa"], phase, limits, fma_peak)
    k["pct_peak"] = 100 * k["gflops"] / peak
    # Memory-bound rows: against the read probe interleaved with them (the
    # bandwidth while they ran), else the limit measured at the start.
    k["read_gbps"] = statistics.median(x["read_probe"]["gbps"] for x in rows) if "read_probe" in rows[0] else bw
    k["pct_bandwidth"] = 100 * k["gbps"] / k["read_gbps"]
    if "onednn_matmul" in k:
        k["vs_matmul"] = k["onednn_matmul"]["median_ms"] / ms
    if "onednn_fused" in k:
        k["vs_fused"] = k["onednn_fused"]["median_ms"] / ms
    if "onednn_sgemm" in k:
        k["vs_onednn"] = k["onednn_sgemm"]["median_ms"] / ms
        k["vs_openblas"] = k["openblas_sgemm"]["median_ms"] / ms
    return k


def attention_blocks(mha, kernels):
    """halformer's q/k/v projection + attention + output projection against PyTorch's block."""
    by = {(k["kernel"], k["phase"]): k for k in kernels}
    rows = []
    for s, runs in mha.items():
        parts = [by.get((n, f"prefill S={s}")) for n in ("qkv_projection", "attention", "out_projection")]
        if all(parts):
            ours = sum(x["halformer"]["median_ms"] for x in parts)
            theirs = combine(runs)
            rows.append({"seq": s, "halformer_ms": ours, "pytorch": theirs, "speedup": theirs["median_ms"] / ours})
    return rows


def measure_kernels(a, t, limits):
    """Every kernel (bench_kernels, with its oneDNN matmul and sgemm baselines and read probe) and PyTorch's
    attention block, in rounds: (kernel rows, attention block rows)."""
    omp = {"OMP_NUM_THREADS": t, "OMP_WAIT_POLICY": "passive"}  # oneDNN's OpenMP pool
    # The widest ISA this CPU has (an ISA it lacks is null in bench_limits' output).
    peak = (None if a.isa else limits["fma_peak_gflops"]["avx512"]) or limits["fma_peak_gflops"]["avx2"]
    # Kernels read (weights, caches) far more than they write: % of the read-only bandwidth.
    bw = limits["bandwidth_gbps"]["read"]
    quick = a.quick or a.smoke
    rounds = 1 if quick else 2
    kernel_args = ["--samples", "1", "--min-ms", "0.1", "--only", "out_projection"] if a.smoke else [
        "--samples", "3" if quick else "5", "--min-ms", "10" if quick else "20"]
    kruns, mha = {}, {}
    for r in range(rounds):
        log(f"kernels, round {r + 1}/{rounds} (halformer, oneDNN, OpenBLAS interleaved)")
        for row in run_json([os.path.join(BIN, "bench_kernels"), "--threads", t] + kernel_args, env=omp, lines=True):
            if "skipped" in row:  # a library kernel no benchmark phase runs
                log(f"kernel {row['kernel']}: {row['skipped']}")
                continue
            kruns.setdefault((row["kernel"], row["phase"]), []).append(row)
        log(f"PyTorch nn.MultiheadAttention, round {r + 1}/{rounds}")
        for s in (128,) if a.smoke else (128, 512, 2048):
            mha.setdefault(s, []).append(run_json([TORCH_PY, os.path.join(ROOT, "bench", "torch_bench.py"), "mha",
                                                   "--seq", str(s), "--threads", t, "--samples",
                                                   "1" if a.smoke else "5"]))
    kernels = [kernel_row(kernel, phase, rows, limits, peak, bw) for (kernel, phase), rows in kruns.items()]
    return kernels, attention_blocks(mha, kernels)


def e2e_cases(a):
    """(cases, natural_cases, int8_cases) for the run's size: (mode, batch) pairs."""
    if a.smoke:
        return [("encode", 1), ("greedy", 1), ("beam", 1)], [("beam", 1)], [("greedy", 1)]
    if a.quick:
        return ([("encode", 8), ("greedy", 1), ("greedy", 8), ("beam", 1)], [("greedy", 8)],
                [("greedy", 1), ("greedy", 8), ("beam", 8)])
    return ([("encode", 1), ("encode", 8), ("greedy", 1), ("greedy", 8), ("greedy", 32), ("beam", 1), ("beam", 8),
             ("beam", 32)], [("greedy", 8), ("greedy", 32), ("beam", 8)],
            [("greedy", 1), ("greedy", 8), ("greedy", 32), ("beam", 8), ("beam", 32)])


def prefill_heavy_sources(model):
    """Sources of 200-256 tokens (32 of them, random ids, fixed seed) beside the
    model's: the prefill-heavy case, where the encoder and the cross-attention
    keys dominate (batch 32, 8 new tokens)."""
    path = os.path.join(model, "sources-long.txt")
    if not os.path.exists(path):
        import random
        rng = random.Random(7)
        with open(path, "w") as f:
            for _ in range(32):
                f.write(" ".join(str(rng.randrange(4, 32000)) for _ in range(rng.randint(200, 256))) + "\n")
    return path


def prefill_heavy_cases(a, t, model, ct2_model, samples, computes):
    """The prefill-heavy case for each compute type: batch 32 (a smoke run: 1),
    8 new tokens (2), against CTranslate2."""
    batch, new_tokens = ("1", "2") if a.smoke else ("32", "8")
    long_sources = prefill_heavy_sources(model)
    return {c: e2e_case(a, t, "greedy", int(batch), model, ct2_model, long_sources, new_tokens, samples, False, c,
                        f"prefill-heavy greedy batch {batch} (sources 200-256; {new_tokens} new tokens)")
            for c in computes}


def measure_e2e(a, t, model, ct2_model, sources):
    """End to end: the EOS-suppressed Transformer-base, then the trained model whose
    outputs end at their own lengths (finished sentences leave the batch); int8
    and bfloat16 on both."""
    cases, natural_cases, int8_cases = e2e_cases(a)
    samples = "1" if a.smoke else "2" if a.quick else "3"
    new_tokens = "4" if a.smoke else "64"
    res = {"new_tokens": int(new_tokens)}
    res["e2e"] = [e2e_case(a, t, mode, batch, model, ct2_model, sources, new_tokens, samples, True)
                  for mode, batch in cases]
    trained, res["training"] = trained_model(a)
    trained_sources = os.path.join(trained, "sources.txt")
    res["natural"] = [e2e_case(a, t, mode, batch, trained, trained + "-ct2", trained_sources, "64", samples, False)
                      for mode, batch in natural_cases]
    # int8: halformer's int8 GEMMs against CTranslate2's int8_float32, same models.
    res["int8"] = [e2e_case(a, t, mode, batch, model, ct2_model, sources, new_tokens, samples, False, INT8)
                   for mode, batch in int8_cases]
    res["int8"] += [e2e_case(a, t, mode, batch, trained, trained + "-ct2", trained_sources, "64", samples, False,
                             INT8) for mode, batch in natural_cases[:1]]
    # bfloat16 where the CPU has AVX-512 BF16 (CTranslate2 has no CPU bfloat16: its
    # float32 is the peer); the ratio to halformer float32 comes from the e2e rows.
    res["bf16"], res["bf16_unavailable"] = [], bf16_missing(a.isa)
    if not res["bf16_unavailable"]:
        res["bf16"] = [e2e_case(a, t, mode, batch, model, ct2_model, sources, new_tokens, samples, False, BF16)
                       for mode, batch in int8_cases]
    heavy = prefill_heavy_cases(a, t, model, ct2_model, samples,
                                (FLOAT32, INT8) + (() if res["bf16_unavailable"] else (BF16,)))
    res["e2e"].append(heavy[FLOAT32])
    res["int8"].append(heavy[INT8])
    if BF16 in heavy:
        res["bf16"].append(heavy[BF16])
    # Random sampling, top-k 10 (each system's own draws: their outputs differ).
    sample_batch = 1 if a.smoke else 8 if a.quick else 32
    res["e2e"].append(e2e_case(a, t, "sample", sample_batch, model, ct2_model, sources, new_tokens, samples, False,
                               case=f"sample top-k 10 batch {sample_batch}"))
    for r in res["e2e"] + res["natural"] + res["int8"] + res["bf16"]:
        for s in r["systems"].values():
            s.pop("first_tokens", None)
    return res


def main():
    a, kind, kind_text = parse_args()
    t = str(a.threads)
    state = machine_state(a.threads)
    state["cpu_kind"], state["cpu_text"] = kind, kind_text
    log(f"machine: {state['cpu']}, {a.threads} threads; results to {a.out}")
    model, ct2_model, sources = benchmark_model()
    log("machine limits: FMA peak, bandwidth")
    limits = run_json([os.path.join(BIN, "bench_limits"), "--threads", t, "--samples", "1" if a.smoke else "5"])
    kernels, mha_rows = measure_kernels(a, t, limits)
    results = {"machine": state, "limits": limits, "kernels": kernels, "mha": mha_rows,
               "amx_vs_vnni": measure_amx_against_vnni(a, t, kernels, BIN, run_json, combine, log)}
    results.update(measure_e2e(a, t, model, ct2_model, sources))
    state["loadavg_after"] = os.getloadavg()
    results["commands"] = COMMANDS
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_report(a, results, ISA_CAP, os.path.join(BIN, "halformer_chart"))
    log(f"done: {os.path.join(a.out, 'README.md')}")


def trained_model(a):
    """The natural-length model (bench/train_model.py), trained once per build
    directory (a smoke run's, barely trained, in its own), and converted for CT2."""
    model = os.path.join(BUILD, "bench-trained-smoke" if a.smoke else "bench-trained")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        log("training the natural-length model (copy task)")
        subprocess.run([TORCH_PY, os.path.join(ROOT, "bench", "train_model.py"), model, "--seconds",
                        "5" if a.smoke else "150", "--threads", str(a.threads)], check=True)
    if not os.path.exists(os.path.join(model + "-ct2", "model.bin")):
        subprocess.run([VENV_PY, os.path.join(ROOT, "bench", "ct2_bench.py"), "convert", model, model + "-ct2"],
                       check=True)
    with open(os.path.join(model, "training.json")) as f:
        return model, json.load(f)


FLOAT32 = ("float32", "float32")  # (halformer's compute type, CTranslate2's)
INT8 = ("int8", "int8_float32")
BF16 = ("bfloat16", "float32")


def bf16_missing(isa_cap):
    """None where halformer runs bfloat16 on this CPU (its avx512_vnni kernel ISA),
    else why not, as `halformer info` says."""
    if isa_cap:
        return f"not run: --isa {isa_cap} caps the kernels below AVX-512 BF16"
    info = subprocess.run([os.path.join(BIN, "halformer"), "info"], capture_output=True, text=True).stdout
    supports = next((l for l in info.splitlines() if l.startswith("CPU supports:")), "")
    if " avx512_vnni" in supports:
        return None
    return f"not available on this CPU (it lacks AVX-512 BF16; {supports.strip() or 'no CPU line from halformer info'})"


def e2e_case(a, threads, mode, batch, model, ct2_model, sources, new_tokens, samples, with_torch, compute=FLOAT32,
             case=None):
    """One end-to-end case (`case` names it where the mode and batch do not):
    halformer and CTranslate2 in alternating order (and PyTorch once), pooled;
    whether each system's outputs agree with halformer's."""
    quick = a.quick or a.smoke
    label = ((case or f"{mode} batch {batch}" + (" beam 4" if mode == "beam" else ""))
             + ("" if compute == FLOAT32 else f", {os.path.basename(model)}"))
    res = {"mode": mode, "batch": batch, "label": label, "compute": list(compute), "systems": {}}
    ours_cmd = [os.path.join(BIN, "bench_e2e"), "--model", model, "--sources", sources, "--mode", mode,
                "--batch", str(batch), "--threads", threads, "--samples", samples, "--new-tokens", new_tokens,
                "--compute-type", compute[0]]
    ct2_cmd = [VENV_PY, os.path.join(ROOT, "bench", "ct2_bench.py"), "e2e", ct2_model, sources, "--mode", mode,
               "--batch", str(batch), "--threads", threads, "--samples", samples, "--new-tokens", new_tokens,
               "--compute-type", compute[1]]
    runs = {"halformer": [], "ctranslate2": []}
    for r in range(1 if quick else 2):  # alternating order: A B, then B A
        order = [("halformer", ours_cmd), ("ctranslate2", ct2_cmd)]
        for name, cmd in (order if r % 2 == 0 else order[::-1]):
            if name == "ctranslate2" and mode == "encode":
                continue  # CTranslate2's Translator has no encoder-only call
            log(f"end to end: {os.path.basename(model)}: {label}: {name}")
            runs[name].append(run_json(cmd))
    if with_torch and not (mode == "beam" and batch == 32 and not a.full):
        log(f"end to end: {label}: pytorch" + ("" if mode == "encode" else " (re-runs the decoder on the prefix)"))
        runs["pytorch"] = [run_json([TORCH_PY, os.path.join(ROOT, "bench", "torch_bench.py"), "e2e", model,
                                     sources, "--mode", mode, "--batch", str(batch), "--threads", threads,
                                     "--samples", "1", "--new-tokens", new_tokens])]
    for name, rs in runs.items():
        if not rs:
            continue
        c = combine(rs)
        res["systems"][name] = {**c, "tokens": rs[0]["tokens"], "tokens_per_s": rs[0]["tokens"] / c["median_s"],
                                "peak_rss_mb": max(x["peak_rss_mb"] for x in rs),
                                "load_s": statistics.median(x["load_s"] for x in rs) if "load_s" in rs[0] else None,
                                "first_tokens": rs[0].get("first_tokens", [])}
    # Output agreement with halformer (same weights; float32 differences may flip near-ties).
    ours = res["systems"]["halformer"]["first_tokens"]
    for name, srec in res["systems"].items():
        other = srec["first_tokens"]
        if name != "halformer" and ours and other:
            same = sum(1 for x, y in zip(ours, other) if x == y)
            srec["same_output_as_halformer"] = f"{same}/{len(ours)}"
    return res


if __name__ == "__main__":
    main()
