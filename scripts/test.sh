#!/usr/bin/env bash
# Runs every test (kernels on every ISA path, DSL compile-fail tests, ...).
# Usage: scripts/test.sh [extra ctest args]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${HALFORMER_BUILD_DIR:-build}
export PATH="$(pwd)/.venv/bin:$PATH"
[[ -f $build/CTestTestfile.cmake ]] || { echo "no build in '$build': run scripts/setup.sh first" >&2; exit 1; }
cmake --build "$build" --parallel "$(nproc)"
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" "$@"
