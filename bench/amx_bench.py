"""bench/run.py's kernel limits and its AMX comparison: which peak a kernel's
call runs against (FMA, vpdpbusd, vdpbf16ps or AMX tiles), and the AMX GEMMs
against the same kernels' avx512_vnni code (docs/kernels.md, AMX)."""
import os


def takes_amx(kernel, isa, phase):
    """Whether a kernel's call runs AMX tiles (dsl/lower_amx.hpp): the amx code's int8 and bfloat16 GEMMs whose
    weight has one input dim (FFN, logits, Q/K/V projections; not the out projection) at prefill of >= 64
    rows (every prefill phase here)."""
    dot_product = kernel.endswith("_bf16") or kernel.endswith("_int8")
    return isa == "amx" and dot_product and phase.startswith("prefill") and kernel.startswith(("ffn_", "logits", "qkv_", "kv_", "q_"))


def kernel_peak(kernel, isa, phase, limits, fma_peak):
    """The compute limit of a kernel: the peak of what its code multiplies with where it uses dot products
    (*_bf16: vdpbf16ps, *_int8: vpdpbusd, in the avx512_vnni and amx code; AMX tiles where the call takes
    them), else the FP32 FMA peak; (G operations/s, what it is)."""
    dot = limits.get("dot_peak_gops", {})
    kind = "bf16" if kernel.endswith("_bf16") else "int8" if kernel.endswith("_int8") else None
    if kind and takes_amx(kernel, isa, phase) and dot.get("amx_" + kind):
        return dot["amx_" + kind], {"bf16": "AMX tdpbf16ps", "int8": "AMX tdpbusd"}[kind]
    if kind and isa in ("avx512_vnni", "amx") and dot.get(kind):
        return dot[kind], {"bf16": "vdpbf16ps", "int8": "vpdpbusd"}[kind]
    return fma_peak, "FMA"


# The prefill GEMMs AMX runs (takes_amx), at the shapes of bench_kernels' prefill phases.
AMX_CASES = [(k + suffix, shape) for suffix in ("_int8", "_bf16")
             for k, shape in (("ffn_relu", "d_model=512,d_ff=2048"), ("qkv_projection", "d_k=64,heads=8"))]


def measure_amx_against_vnni(a, t, kernels, bin_dir, run_json, combine, log):
    """On a CPU whose dot-product kernels run the amx code: each AMX GEMM at prefill S = 512 and 2048 against
    the same kernel with HALFORMER_ISA=avx512_vnni (its vector code), the two processes alternating per
    kernel and round; rows of {kernel, seq, amx, avx512_vnni, speedup}. Empty elsewhere."""
    if a.isa or not any(k.get("isa") == "amx" for k in kernels):
        return []
    runs = {}
    for r in range(1 if a.quick or a.smoke else 2):
        log(f"AMX against the avx512_vnni code, round {r + 1}")
        for kernel, shape in AMX_CASES[:1] if a.smoke else AMX_CASES:
            for s in (512,) if a.smoke else (512, 2048):
                args = [os.path.join(bin_dir, "bench_kernels"), "--threads", t, "--only", kernel, "--shape",
                        f"{shape},t={s},batch=1", "--samples", "1" if a.smoke else "5", "--min-ms",
                        "0.1" if a.smoke else "20"]
                for isa in ("amx", "avx512_vnni"):
                    row = run_json(args, env={"HALFORMER_ISA": isa}, lines=True)[-1]
                    if row.get("isa") != isa:
                        raise SystemExit(f"bench_kernels ran {row.get('isa')} code where {isa} was forced")
                    runs.setdefault((kernel, s), {}).setdefault(isa, []).append(row["halformer"])
    rows = []
    for (kernel, s), by in runs.items():
        amx, vnni = combine(by["amx"]), combine(by["avx512_vnni"])
        rows.append({"kernel": kernel, "seq": s, "amx": amx, "avx512_vnni": vnni,
                     "speedup": vnni["median_ms"] / amx["median_ms"]})
    return rows
