"""The report bench/run.py writes: README.md (markdown tables), CSV files and SVG
charts of one run's results (its `results.json`)."""
import json
import os
import subprocess


def fmt_peak(gflops):
    return f"{gflops:.0f} GFLOP/s" if gflops else "not available on this CPU"



def svg_bars(chart, path, title, groups, series, unit):
    """groups: [(label, {series: value or None})]; drawn by `chart` (bin/halformer_chart),
    the one chart writer (common/include/halformer/chart.hpp)."""
    spec = {"title": title, "unit": unit, "series": list(series),
            "groups": [{"label": label, "values": [d.get(s) for s in series]} for label, d in groups]}
    with open(path + ".json", "w") as f:
        json.dump(spec, f)
    subprocess.run([chart, path + ".json", path], check=True)
    os.remove(path + ".json")



def mib(limits, key):
    """A size bench_limits recorded, in MiB (results from before it recorded them: unknown)."""
    return f"{limits[key] / 2**20:.0f} MiB" if key in limits else "(unrecorded)"


def fmt_ms(d, key="median_ms"):
    lo, hi = key.replace("median", "min"), key.replace("median", "max")
    return f"{d[key]:.4g} ({d[lo]:.3g}-{d[hi]:.3g})"


def fmt_load(system):
    """The model load's median seconds (the loader's own timer; '-' where a system has none)."""
    return f"{system['load_s']:.2f}" if system.get("load_s") is not None else "-"


def e2e_table(cases):
    L = ["| case | system | s per batch | tokens/s | vs CTranslate2 | vs PyTorch | peak RSS MB | load s | same output |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r in cases:
        s = r["systems"]
        for name in ("halformer", "ctranslate2", "pytorch"):
            if name not in s:
                continue
            x = s[name]
            vc = f"{x['tokens_per_s'] / s['ctranslate2']['tokens_per_s']:.2f}x" if "ctranslate2" in s else "n/a"
            vp = f"{x['tokens_per_s'] / s['pytorch']['tokens_per_s']:.2f}x" if "pytorch" in s else "not run"
            L.append(f"| {r['label']} | {name} | {fmt_ms(x, 'median_s')} | {x['tokens_per_s']:.1f} | {vc} | {vp} | "
                     f"{x['peak_rss_mb']:.0f} | {fmt_load(x)} | {x.get('same_output_as_halformer', '-')} |")
    return L


def machine_section(a, res, isa_cap):
    """The report's title, how it was measured, the machine and its limits."""
    m, lim = res["machine"], res["limits"]
    cap = (f"Every process ran with {' '.join(f'{k}={v}' for k, v in isa_cap[a.isa].items())}: halformer's "
           "kernels, CTranslate2 (its own kernels and its oneDNN GEMMs), PyTorch and both sgemm baselines at AVX2, "
           "as on a CPU without AVX-512 (the memory system and clocks stay this CPU's). ") if a.isa else ""
    L = [f"# Benchmarks: halformer on {m['cpu_text']}, {m['threads']} threads", "",
         f"Measured {m['date']} at commit {m['git']} by `.venv/bin/python bench/run.py"
         f"{' --quick' if a.quick else ''}{' --smoke' if a.smoke else ''}{' --full' if a.full else ''}"
         f"{' --isa ' + a.isa if a.isa else ''}`. {cap}"
         f"CPU: {m['cpu_text']}. Machine: {m['cores']} cores, "
         f"{m['memory']}, Linux {m['kernel']}, governor {m['governor']}, load average "
         f"{m['loadavg_before'][0]:.2f} before / {m['loadavg_after'][0]:.2f} after. Halide {m['halide']}, "
         f"PyTorch {m['torch']}, CTranslate2 {m['ctranslate2']}. Times are medians (min-max); the machine is "
         "shared and noisy.", "",
         "## Machine limits", "",
         "| limit | value |", "|---|---|",
         f"| FP32 FMA peak, AVX-512 | "
         f"{'not used (--isa ' + a.isa + ')' if a.isa else fmt_peak(lim['fma_peak_gflops']['avx512'])} |",
         f"| FP32 FMA peak, AVX2 | {fmt_peak(lim['fma_peak_gflops']['avx2'])} |",
         f"| bfloat16 dot-product peak (vdpbf16ps) | {fmt_peak(lim.get('dot_peak_gops', {}).get('bf16'))} |",
         f"| int8 dot-product peak (vpdpbusd) | "
         f"{fmt_peak(lim.get('dot_peak_gops', {}).get('int8')).replace('GFLOP/s', 'G int8 ops/s')} |",
         f"| AMX bfloat16 peak (tdpbf16ps) | {fmt_peak(lim.get('dot_peak_gops', {}).get('amx_bf16'))} |",
         f"| AMX int8 peak (tdpbusd) | "
         f"{fmt_peak(lim.get('dot_peak_gops', {}).get('amx_int8')).replace('GFLOP/s', 'G int8 ops/s')} |",
         f"| memory bandwidth, triad | {lim['bandwidth_gbps']['triad']:.1f} GB/s |",
         f"| memory bandwidth, read | {lim['bandwidth_gbps']['read']:.1f} GB/s |",
         f"| last-level cache; bytes read through (probe, rotations) | {mib(lim, 'last_level_cache_bytes')}; "
         f"{mib(lim, 'rotation_bytes')} |", "",
         "## Kernels", "",
         "Every kernel as built into `libhalformer_kernels.a` (this machine's tuned schedules). Transformer-base: "
         "d_model 512, 8 heads, d_ff 2048, vocab 32000; prefill is batch 1; decode is one token per row with "
         "attention over a 128-position cache. Compute-bound rows give % of the FMA peak, memory-bound rows % of "
         f"the read bandwidth while they ran (a {mib(lim, 'rotation_bytes')} read probe interleaved with their samples; its GB/s is "
         "in the cell), since the host's bandwidth drifts during a run (the limit above was measured once). GB/s "
         f"counts the bytes a model's call takes from memory: weights, tables, attention caches, rotated over "
         f"{mib(lim, 'rotation_bytes')} of copies (twice the {mib(lim, 'last_level_cache_bytes')} last-level cache, "
         "at least 64 MiB); the step's activations stay in cache, as in a model, where the kernel before wrote them "
         "(rows whose bytes from memory are under half their activations' say \"in cache\"). "
         "Compute-bound int8 and bfloat16 rows give % of their dot-product peak (vpdpbusd, vdpbf16ps) where "
         "their code uses it. The peers' ratios are peer time / halformer time (> 1: halformer faster): "
         "oneDNN's matmul primitive of the kernel's type (float32; u8 x s8 -> s32 for int8; bfloat16 -> float32; "
         "weights in its own packed layout; the implementation it chose in brackets, e.g. brg:avx512_core_amx "
         "where it runs AMX; \"fused\": the same matmul given the kernel's epilogue as post-ops: bias, "
         "activation, residual, int8 dequantization per output, the FFN's hidden layer in the compute type), "
         "oneDNN's and OpenBLAS's float32 sgemm on the same GEMMs.",
         "", "| kernel | shape | halformer ms | GFLOP/s | GB/s | % of limit | vs oneDNN matmul | vs oneDNN sgemm "
         "| vs OpenBLAS sgemm |",
         "|---|---|---|---|---|---|---|---|---|"]
    return L


def kernel_section(res):
    """Every kernel's row, then the attention block against PyTorch."""
    L = []
    for k in res["kernels"]:
        pct = f"{k['pct_peak']:.0f}% {k.get('peak_of', 'FMA')} peak" if k["compute_bound"] else \
            f"{k['pct_bandwidth']:.0f}% of {k['read_gbps']:.1f} GB/s" if 2 * k["bytes"] >= k.get("activation_bytes", 0) \
            else "in cache"
        vs = f"{k['vs_onednn']:.2f}x" if "vs_onednn" in k else "-"
        vb = f"{k['vs_openblas']:.2f}x" if "vs_openblas" in k else "-"
        vm = f"{k['vs_matmul']:.2f}x ({k['onednn_matmul']['type']}, {k['onednn_matmul']['impl']})" \
            if "vs_matmul" in k else "-"
        if "vs_fused" in k:
            vm += f"; fused {k['vs_fused']:.2f}x ({k['onednn_fused']['impl']})"
        L.append(f"| {k['kernel']} | {k['phase']} | {fmt_ms(k['halformer'])} | {k['gflops']:.1f} | "
                 f"{k['gbps']:.1f} | {pct} | {vm} | {vs} | {vb} |")
    L += ["", "Attention block (q/k/v projection + attention + output projection, the sum of the three kernels' "
          "medians) against PyTorch `nn.MultiheadAttention` (self-attention, batch 1):", "",
          "| S | halformer ms | PyTorch ms | speed-up |", "|---|---|---|---|"]
    for r in res["mha"]:
        L.append(f"| {r['seq']} | {r['halformer_ms']:.4g} | {fmt_ms(r['pytorch'])} | {r['speedup']:.2f}x |")
    return L


def amx_section(res):
    """The AMX GEMMs against the same kernels' avx512_vnni code, where the CPU ran AMX."""
    rows = res.get("amx_vs_vnni") or []
    if not rows:
        return []
    L = ["", "AMX: the int8 and bfloat16 prefill GEMMs with the amx code (tiles) and with "
         "`HALFORMER_ISA=avx512_vnni` (vpdpbusd, vdpbf16ps), separate processes alternating per kernel and round "
         "(bench_kernels at the shape, batch 1):", "",
         "| kernel | S | amx ms | avx512_vnni ms | speed-up |", "|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['kernel']} | {r['seq']} | {fmt_ms(r['amx'])} | {fmt_ms(r['avx512_vnni'])} | "
                 f"{r['speedup']:.2f}x |")
    return L


def e2e_sections(a, res):
    """The end-to-end tables: float32, natural lengths, int8."""
    L = []
    L += ["", "## End to end", "",
          "Transformer-base (pre-norm, random weights, vocab 32000; EOS suppressed so every system decodes exactly "
          f"{res['new_tokens']} tokens), sources of 128 tokens; the prefill-heavy case's sources have 200-256 tokens "
          "and it decodes 8 (the encoder and the cross-attention's keys dominate). halformer and CTranslate2 (float32) run twice in alternating order, "
          "PyTorch once (decoding re-runs the decoder on the whole prefix: nn.Transformer has no KV cache). "
          "Tokens/s counts source tokens for encode, generated tokens otherwise. Peak RSS is the process's. "
          "Load s: loading the model (read, quantized where int8, repacked), not part of s per batch.", "",
          ] + e2e_table(res["e2e"])
    L += ["", "Not measured: CTranslate2 encode (its Translator has no encoder-only call)"
          + ("" if a.full else "; PyTorch beam-4 at batch 32 (about 10 minutes; `--full` runs it)") + ".", ""]
    tr = res["training"]
    L += ["## End to end, natural lengths", "",
          f"A small trained model (`bench/train_model.py`: pre-norm, d_model 128, 4 heads, d_ff 512, 2 + 2 layers, "
          f"vocab 1000) that copies its source: {tr['steps']} steps in {tr['seconds']} s on this machine, final "
          f"loss {tr['final_loss']:.3f}, {tr['copy_exact_16_held_out']:.0%} of 16 held-out sources copied exactly. "
          f"Its 64 sources have {tr['source_lengths']} tokens, so a batch's outputs end at different steps (at "
          "most 64 tokens): finished sentences leave halformer's batch. Tokens/s counts the tokens generated.", ""]
    L += e2e_table(res["natural"])
    L += ["", "## End to end, int8", "",
          "halformer `--compute-type int8` (GEMM weights int8 with a step per output row, activations quantized per "
          "row, exact int32 sums; LayerNorm, softmax and attention in float32, the decoder's attention keys and "
          "values kept in float16, `--kv-cache auto`) against CTranslate2 `int8_float32` (float32 keys and values), "
          "on the Transformer-base model above and the trained copy model. Same output: sentences whose tokens equal "
          "halformer int8's.", ""]
    L += e2e_table(res["int8"])
    return L


def bf16_section(res):
    L = []
    L += ["", "## End to end, bfloat16", ""]
    if res["bf16_unavailable"]:
        L += [f"halformer `--compute-type bfloat16`: {res['bf16_unavailable']}.", ""]
    else:
        L += ["halformer `--compute-type bfloat16` (GEMM weights rounded to bfloat16 at load, inputs rounded per "
              "kernel, float32 sums by vdpbf16ps; embeddings, LayerNorm, softmax and attention in float32, the "
              "decoder's attention keys and values in float16) against "
              "CTranslate2 float32 (it has no CPU bfloat16), on the Transformer-base model; the last column of the "
              "second table is halformer bfloat16 time / halformer float32 time from the float32 table.", ""]
        L += e2e_table(res["bf16"])
        f32 = {r["label"]: r["systems"]["halformer"] for r in res["e2e"]}
        L += ["", "| case | halformer float32 s | halformer bfloat16 s | bfloat16 speed-up |", "|---|---|---|---|"]
        for r in res["bf16"]:
            base = r["label"].rsplit(",", 1)[0]
            if base in f32:
                x, y = f32[base], r["systems"]["halformer"]
                L.append(f"| {base} | {fmt_ms(x, 'median_s')} | {fmt_ms(y, 'median_s')} | "
                         f"{x['median_s'] / y['median_s']:.2f}x |")
        L += ["", "![end to end, bfloat16](bf16.svg)", ""]
    return L


def write_csvs(a, res):
    with open(os.path.join(a.out, "kernels.csv"), "w") as f:
        f.write("kernel,phase,median_ms,min_ms,max_ms,gflops,gbps,pct_peak,peak_of,pct_bandwidth,read_gbps,"
                "vs_onednn_matmul,onednn_matmul_impl,vs_onednn,vs_openblas,vs_onednn_fused\n")
        for k in res["kernels"]:
            h = k["halformer"]
            impl = k["onednn_matmul"]["impl"] if "onednn_matmul" in k else ""
            f.write(f"{k['kernel']},{k['phase']},{h['median_ms']},{h['min_ms']},{h['max_ms']},{k['gflops']},"
                    f"{k['gbps']},{k['pct_peak']},{k.get('peak_of', 'FMA')},{k['pct_bandwidth']},{k['read_gbps']},"
                    f"{k.get('vs_matmul', '')},\"{impl}\",{k.get('vs_onednn', '')},{k.get('vs_openblas', '')},"
                    f"{k.get('vs_fused', '')}\n")
    with open(os.path.join(a.out, "e2e.csv"), "w") as f:
        f.write("model,case,system,median_s,min_s,max_s,tokens_per_s,peak_rss_mb\n")
        for model, rows in (("transformer-base", res["e2e"]), ("trained-copy", res["natural"]), ("int8", res["int8"]),
                            ("bfloat16", res["bf16"])):
            for r in rows:
                for name, x in r["systems"].items():
                    f.write(f"{model},{r['label']},{name},{x['median_s']},{x['min_s']},{x['max_s']},"
                            f"{x['tokens_per_s']},{x['peak_rss_mb']}\n")


def write_charts(a, res, chart):
    for file, title, rows in (("e2e.svg", "End to end: tokens/s (longer is faster)", res["e2e"]),
                              ("natural.svg", "End to end, natural lengths: tokens/s (longer is faster)",
                               res["natural"]),
                              ("int8.svg", "End to end, int8: tokens/s (longer is faster)", res["int8"])) + (
                              (("bf16.svg", "End to end, bfloat16: tokens/s (longer is faster)", res["bf16"]),)
                              if res["bf16"] else ()):
        svg_bars(chart, os.path.join(a.out, file), title,
                 [(r["label"], {n: r["systems"].get(n, {}).get("tokens_per_s") for n in
                                ("halformer", "ctranslate2", "pytorch")}) for r in rows],
                 ["halformer", "ctranslate2", "pytorch"], "tokens/s")
    gemm = [k for k in res["kernels"] if "onednn_sgemm" in k]
    svg_bars(chart, os.path.join(a.out, "kernels.svg"), "GEMM-shaped kernels: GFLOP/s (longer is faster)",
             [(f"{k['kernel']} {k['phase']}", {"halformer": k["gflops"],
                                               "oneDNN matmul": k["flops"] / k["onednn_matmul"]["median_ms"] / 1e6
                                               if "onednn_matmul" in k else None,
                                               "oneDNN sgemm": k["flops"] / k["onednn_sgemm"]["median_ms"] / 1e6,
                                               "OpenBLAS sgemm": k["flops"] / k["openblas_sgemm"]["median_ms"] / 1e6})
              for k in gemm], ["halformer", "oneDNN matmul", "oneDNN sgemm", "OpenBLAS sgemm"], "GFLOP/s")


def write_report(a, res, isa_cap, chart):
    """README.md, kernels.csv, e2e.csv and the SVG charts into a.out."""
    L = machine_section(a, res, isa_cap) + kernel_section(res) + amx_section(res) + e2e_sections(a, res) + \
        bf16_section(res)
    L += ["", "## Charts", "", "![end to end](e2e.svg)", "", "![end to end, natural lengths](natural.svg)", "",
          "![end to end, int8](int8.svg)", "",
          "![kernels](kernels.svg)", "",
          "## Commands", "", "```sh"] + res["commands"] + ["```", ""]
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write("\n".join(L))
    write_csvs(a, res)
    write_charts(a, res, chart)
