#!/usr/bin/env python3
"""Keeps the user's documents honest: every repository path, `halformer`
subcommand and option that README.md and docs/ name must exist.

  check_docs.py ROOT HALFORMER [DOC ...]   (default docs: README.md, CHANGELOG.md, docs/**/*.md)
  check_docs.py --self-test HALFORMER      (a named path or option that is missing fails)

Paths are read from inline code and link targets: a token with a '/' (or a link)
is a path relative to the repository or to the document's folder, or the end of
one (`cpu/panels.hpp` for schedules/include/halformer/schedules/cpu/panels.hpp,
as a table row names a file of its folder); globs must match something. Build
outputs are checked where they are the build's binaries and libraries
(`build/bin/...`, `build/lib/...`); other `build/` paths are made by later steps
(benchmarks, fixtures) and are skipped, as are placeholders (`<name>`, `...`)
and the paths of ELSEWHERE. A file that no longer exists is named without code
formatting (history in docs/performance/ says "the cpu/gemm files of the time").
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
COMMAND = re.compile(r"(?:^|[\s/`$(])halformer\s+([a-z][a-z-]*)([^\n`|;&#]*)")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
PATHISH = re.compile(r"^[A-Za-z0-9_.+\-/<>*{},]+$")
# Paths that are not this repository's: a user's outputs and models in the
# examples, and Halide's own sources (its apps and tests, the style models).
ELSEWHERE = ("mylib/", "my-model/", "report/", "opus-mt-en-de/", "apps/", "test/correctness/", "test/performance/",
             "test/generator/")


def cli_options(halformer):
    """{subcommand: set of its options}, from the CLI's own --help."""
    top = subprocess.run([halformer, "--help"], capture_output=True, text=True).stdout
    subs = re.findall(r"^\s{2}([a-z][a-z-]+)\s", top.split("SUBCOMMANDS:")[-1], re.M)
    if not subs:
        sys.exit(f"check_docs: no subcommands in '{halformer} --help'")
    found = {}
    for s in subs:
        out = subprocess.run([halformer, s, "--help"], capture_output=True, text=True).stdout
        found[s] = set(OPTION.findall(out)) | {"--help"}
    return found


def exists(token, doc_dir, root, tracked):
    token = token.rstrip(".,:;").split("#")[0].split(":")[0]
    if any(glob.glob(os.path.join(base, token)) for base in (root, doc_dir)):
        return True
    # The end of a tracked path (a file, or a folder holding one).
    pattern = re.compile("(^|/)" + re.escape(token.rstrip("/")).replace(r"\*", "[^/]*") + "($|/)")
    return any(pattern.search(f) for f in tracked)


def tracked_files(root):
    """The repository's files (git's, else every file below root)."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True)
    if out.returncode == 0:
        return out.stdout.split("\n")
    return [os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files]


def path_tokens(text):
    no_fences = FENCE.sub("", text)
    for t in CODE.findall(no_fences):
        if "<" in t:  # a placeholder: `bench/results/<cpu kind>/`
            continue
        for word in t.split():
            if "/" in word and PATHISH.match(word) and not word.startswith(("-", "/", "http")):
                yield word
    for t in LINK.findall(text):
        if not t.startswith(("http", "#", "mailto:")):
            yield t


def missing_paths(doc, root, build, tracked):
    text = open(doc, encoding="utf-8").read()
    problems = []
    for token in sorted(set(path_tokens(text))):
        if "<" in token or "..." in token or "{" in token or token.startswith(ELSEWHERE):
            continue
        if token.startswith("build/"):
            if not re.match(r"build/(bin|lib)/", token) or not build:
                continue
            if not glob.glob(os.path.join(build, token[len("build/"):].rstrip(".,:;"))):
                problems.append(f"{doc}: names the build output '{token}', which the build does not make")
            continue
        if not exists(token, os.path.dirname(doc), root, tracked):
            problems.append(f"{doc}: names '{token}', which does not exist")
    return problems


def bad_commands(doc, options):
    text = open(doc, encoding="utf-8").read()
    spans = FENCE.findall(text) + CODE.findall(FENCE.sub("", text))
    problems = []
    for span in spans:
        for sub, rest in COMMAND.findall(span):
            if sub not in options:
                problems.append(f"{doc}: names 'halformer {sub}', which is no subcommand")
                continue
            for opt in OPTION.findall(rest):
                if opt not in options[sub]:
                    problems.append(f"{doc}: names 'halformer {sub} {opt}', which is no option of it")
    return problems


def check(root, halformer, docs, build):
    options = cli_options(halformer)
    tracked = tracked_files(root)
    problems = []
    for doc in docs:
        problems += missing_paths(doc, root, build, tracked) + bad_commands(doc, options)
    return problems


def default_docs(root):
    docs = [os.path.join(root, d) for d in ("README.md", "CHANGELOG.md")]
    return docs + sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))


def self_test(halformer):
    """The checks fail on what is missing, and pass on what exists."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "dsl", "include", "halformer", "dsl"))
        open(os.path.join(root, "dsl", "include", "halformer", "dsl", "layers.hpp"), "w").close()
        good = os.path.join(root, "good.md")
        with open(good, "w") as f:
            f.write("See `dsl/layers.hpp` and [it](dsl/include/halformer/dsl/layers.hpp).\n"
                    "```sh\nbuild/bin/halformer run --model m --beam 4\n```\n")
        bad = os.path.join(root, "bad.md")
        with open(bad, "w") as f:
            f.write("See `dsl/gone.hpp` and [it](docs/nowhere.md).\n"
                    "```sh\nbuild/bin/halformer run --model m --no-such-option\nhalformer frobnicate\n```\n")
        got_good = check(root, halformer, [good], None)
        got_bad = check(root, halformer, [bad], None)
    expected = ["'dsl/gone.hpp'", "'docs/nowhere.md'", "--no-such-option", "'halformer frobnicate'"]
    failures = [f"a correct document was refused: {p}" for p in got_good]
    failures += [f"not caught: {e}" for e in expected if not any(e in p for p in got_bad)]
    for f in failures:
        print("FAILED:", f)
    print(f"docs check self-test: {len(failures)} failures")
    return 1 if failures else 0


def report(problems, summary):
    """Prints each problem and a summary line; the exit status."""
    for p in problems:
        print(p)
    print(f"{summary}, {len(problems)} problems")
    return 1 if problems else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "--self-test":
        return self_test(argv[2])
    if len(argv) < 3:
        print(__doc__)
        return 2
    root, halformer = argv[1], argv[2]
    build = os.path.dirname(os.path.dirname(os.path.abspath(halformer)))
    docs = argv[3:] or default_docs(root)
    return report(check(root, halformer, docs, build), f"docs check: {len(docs)} documents")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
