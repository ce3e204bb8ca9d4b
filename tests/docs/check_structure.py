#!/usr/bin/env python3
"""The tree's shape, as docs/design.md states it:
- no source file or document over 400 lines (data and generated reports aside:
  JSON, SVG, CSV, bench/results/, the schedule database, the fixtures);
- no file includes another top-level folder's files by a relative path
  (`#include "../../runtime/src/x.hpp"`): a folder's headers reach others
  through the include directories its CMake targets publish.

  check_structure.py ROOT
"""
import os
import re
import subprocess
import sys

from check_docs import report

SOURCE = re.compile(r"\.(cpp|hpp|c|h|py|sh|cmake|md|in)$|(^|/)CMakeLists\.txt$")
DATA = re.compile(r"^(bench/results/|schedules/db/|schedules/results/|tests/fixtures/)")
RELATIVE_INCLUDE = re.compile(r'^\s*#\s*include\s+"((\.\./)+[^"]+)"', re.M)


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"], capture_output=True,
                         text=True, check=True).stdout
    return [f for f in out.split("\n") if f and os.path.isfile(os.path.join(root, f))]


def problems_of(root, files):
    problems = []
    for f in files:
        if not SOURCE.search(f) or DATA.match(f):
            continue
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        lines = text.count("\n")
        if lines > 400:
            problems.append(f"{f}: {lines} lines (at most 400)")
        for inc, _ in RELATIVE_INCLUDE.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(f), inc))
            if target.split("/")[0] != f.split("/")[0]:
                problems.append(f"{f}: includes {inc}, another folder's file by its path")
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    files = tracked(argv[1])
    return report(problems_of(argv[1], files), f"structure check: {len(files)} files")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
