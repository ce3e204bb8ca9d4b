#!/usr/bin/env bash
# halformer set-up: installs every dependency, builds everything, runs the demo.
# Usage: scripts/setup.sh            (idempotent; re-running only rebuilds what changed)
# Env:   HALFORMER_BUILD_DIR (default build), HALFORMER_SKIP_APT=1 to skip apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${HALFORMER_BUILD_DIR:-build}

apt_packages=(
  build-essential g++ git pkg-config
  libboost-dev          # Boost.Hana: the DSL's compile-time shape algebra
  catch2                # unit tests (v2.13)
  nlohmann-json3-dev    # knob files, schedule database, safetensors headers
  libcli11-dev libfmt-dev clang   # clang: libFuzzer for the reader fuzzers
  pocl-opencl-icd ocl-icd-opencl-dev   # OpenCL on the CPU for GPU-scheduled kernels
  python3-torch python3-numpy          # reference implementation for fixtures
  libopenblas-dev libdnnl-dev          # BLAS baselines (OpenBLAS, oneDNN sgemm) for benchmarks
  libsentencepiece-dev                 # MarianMT tokenizers (halformer translate)
  python3-venv                         # the reference venv below
  g++-aarch64-linux-gnu qemu-user      # the AArch64 build (build/arm64), its tests under qemu
  libfmt-dev:arm64                     # its CLI's fmt, and arm64 glibc for qemu (multiarch)
)

need_apt=0
# The arm64 packages above come through Debian's multiarch.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  add_arch=1
  need_apt=1
fi
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need_apt=1
done
if [[ ${HALFORMER_SKIP_APT:-0} != 1 && $need_apt == 1 ]]; then
  echo "== apt: installing ${apt_packages[*]}"
  sudo_cmd=""; [[ $(id -u) == 0 ]] || sudo_cmd=sudo
  [[ ${add_arch:-0} == 1 ]] && $sudo_cmd dpkg --add-architecture arm64
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

# Project venv: Halide 21 from its wheel (headers, libHalide, CMake package,
# autoscheduler plugins) and a CMake new enough for Halide's CMake package.
if [[ ! -x .venv/bin/python ]]; then
  echo "== venv: creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import halide, ctranslate2, numpy, nanobind" 2>/dev/null ||
   [[ ! -x .venv/bin/cmake || ! -x .venv/bin/ninja ]]; then
  echo "== venv: pip install -r scripts/requirements.txt"
  .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi
# Reference venv: transformers 4.40.2 (MarianMT parity tests) and CTranslate2's
# converter of its models (bench/marian_bench.py) over Debian's
# python3-torch, which only Debian's Python has.
if ! .venv-ref/bin/python -c "import transformers, sentencepiece, torch, ctranslate2" 2>/dev/null; then
  echo "== venv: .venv-ref (transformers over Debian's torch)"
  /usr/bin/python3 -m venv --system-site-packages .venv-ref
  .venv-ref/bin/pip install -q --disable-pip-version-check -r scripts/requirements-reference.txt
fi
# SentencePiece for the AArch64 build: Debian's arm64 packages unpacked into
# $build/arm64-deps (they cannot be installed beside the amd64 ones).
arm64_deps="$build/arm64-deps"
if [[ ! -e $arm64_deps/usr/lib/aarch64-linux-gnu/libsentencepiece.so ]] && dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "== AArch64 build: unpacking Debian's arm64 SentencePiece into $arm64_deps"
  mkdir -p "$arm64_deps/debs"
  (cd "$arm64_deps/debs" && apt-get download -qq libsentencepiece0:arm64 libsentencepiece-dev:arm64 2>/dev/null)
  for deb in "$arm64_deps"/debs/*.deb; do dpkg-deb -x "$deb" "$arm64_deps"; done
fi
halide_dir=$(.venv/bin/python -c "import halide; print(halide.install_dir())")
echo "== Halide $(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("halide"))') at $halide_dir"

export PATH="$root/.venv/bin:$PATH"
echo "== configure ($build)"
# Configure's own lines but halformer's (the knob choice: HALFORMER_KNOBS, docs/tuning.md).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHalide_ROOT="$halide_dir" | { grep "halformer:" || true; }
echo "== build"
cmake --build "$build" --parallel "$(nproc)"

# `import halformer` in .venv: the package the build put in $build/python.
site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo "$(cd "$build" && pwd)/python" > "$site/halformer.pth"

echo "== demo: one encoder layer through the kernels"
"$build/bin/halformer_demo"
echo "== demo: translate with the built-in model ($build/demo-model, random weights: the ids are meaningless)"
echo "   \$ printf '5 6 7 8 9\\n10 11 12\\n' | $build/bin/halformer run --model $build/demo-model --beam 4 --max-len 12"
printf '5 6 7 8 9\n10 11 12\n' | "$build/bin/halformer" run --model "$build/demo-model" --beam 4 --max-len 12
"$build/bin/halformer" info --model "$build/demo-model"
