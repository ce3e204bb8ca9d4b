"""The CPU kind a benchmark report is filed under (bench/results/<kind>)."""


def cpu_kind():
    """A name for the CPU kind: vendor and model name, AMD's microarchitecture from
    its family and model (the model name alone says "AMD EPYC" for all of them),
    and the widest vector ISA its kernels use."""
    info = open("/proc/cpuinfo").read().split("\n\n")[0]
    field = dict((k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in info.splitlines()))
    name, family, model = field.get("model name", "cpu"), int(field.get("cpu family", 0)), int(field.get("model", 0))
    flags = field.get("flags", "").split()
    isa = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags and "fma" in flags else "sse41"
    arch = ""
    if "AMD" in name:
        arch = {23: "zen2" if model >= 0x30 else "zen1", 26: "zen5"}.get(family, "")
        if family == 25:
            arch = "zen4" if 0x10 <= model <= 0x1F or 0x60 <= model <= 0x7F or 0xA0 <= model <= 0xAF else "zen3"
    slug = "".join(c if c.isalnum() else "-" for c in name.lower().replace("(r)", "").replace("(tm)", ""))
    slug = "-".join(x for x in slug.split("-") if x and x not in ("processor", "cpu"))
    return "-".join(x for x in (slug, arch or f"f{family}m{model}", isa) if x), f"{name} (family {family}, model {model}, {isa})"
