#!/usr/bin/env python3
"""The generator's prefetch hint (generators/prefetch_hint.hpp), end to end.

prefetch_hint_test.py GENERATOR KNOB_FILE KERNEL TARGET WORK_DIR

Compiles KERNEL for TARGET three times (prefetch_hint=nta, the default, and t2)
as an object, a static library and assembly, and checks, with objdump as the independent
disassembler:
- nta is Halide's own code: it has prefetchnta and no other hint;
- the default is t1: the same number of prefetcht1 and no prefetchnta;
- the default and t2 objects differ from the nta object only in the ModRM bytes
  of those prefetches, each by the hint's reg field (t1: 2 << 3, t2: 3 << 3),
  in the object and in the archive's member alike;
- the assembly says the same instructions.
"""
import re
import subprocess
import sys
from pathlib import Path

generator, knob_file, kernel, target, work = sys.argv[1:6]
work = Path(work)


def compile_kernel(hint):
    out = work / (hint or "default")
    out.mkdir(parents=True, exist_ok=True)
    args = [generator, "-g", "kernel", "-f", "candidate", "-e", "object,static_library,assembly,c_header", "-o", str(out),
            f"target={target}-no_runtime", f"knob_file={knob_file}", f"kernel={kernel}"]
    subprocess.run(args + ([f"prefetch_hint={hint}"] if hint else []), check=True)
    return out


def hints(path):
    text = subprocess.run(["objdump", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    found = {}
    for m in re.finditer(r"\tprefetch(nta|t0|t1|t2) ", text):
        found[m.group(1)] = found.get(m.group(1), 0) + 1
    return found


def differing_bytes(a, b):
    x, y = a.read_bytes(), b.read_bytes()
    assert len(x) == len(y), (a, b, "lengths differ")
    return [(i, x[i], y[i]) for i in range(len(x)) if x[i] != y[i]]


nta, default, t2 = compile_kernel("nta"), compile_kernel(None), compile_kernel("t2")
for name in ("candidate.o", "candidate.a"):
    base = hints(nta / name)
    count = base.get("nta", 0)
    assert count > 0 and set(base) == {"nta"}, (name, "Halide's own prefetches", base)
    for directory, hint, reg in ((default, "t1", 2), (t2, "t2", 3)):
        got = hints(directory / name)
        assert got == {hint: count}, (name, hint, got, "expected", count)
        diffs = differing_bytes(nta / name, directory / name)
        assert len(diffs) == count, (name, hint, len(diffs), "bytes differ, expected", count)
        assert all(b == (a | reg << 3) and (a >> 3) & 7 == 0 for _, a, b in diffs), (name, hint, diffs[:4])
    print(f"{name}: {count} prefetchnta -> prefetcht1 / prefetcht2, nothing else changed")

for directory, hint in ((nta, "nta"), (default, "t1"), (t2, "t2")):
    text = (directory / "candidate.s").read_text()
    found = set(re.findall(r"\tprefetch(nta|t0|t1|t2)\t", text))
    assert found == {hint}, ("assembly", hint, found)
print("candidate.s: the hint asked for, and no other")
