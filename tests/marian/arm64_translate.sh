#!/usr/bin/env bash
# The AArch64 CLI (build/arm64, under qemu-aarch64) translates the trained
# copy-task MarianMT fixture as the x86 CLI does: float32, greedy and beam 4,
# the same lines, with dot products (QEMU_CPU=max) and without (cortex-a53).
# usage: arm64_translate.sh X86_CLI ARM64_CLI QEMU FIXTURE_DIR
set -euo pipefail
x86=$1 arm=$2 qemu=$3 fixture=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for beam in 1 4; do
  args=(translate --model "$fixture" --input "$fixture/sources.txt" --beam "$beam" --length-penalty 1
        --max-len 48 --threads 2 --compute-type float32)
  "$x86" "${args[@]}" > "$out/x86_$beam"
  for cpu in max cortex-a53; do
    QEMU_CPU=$cpu "$qemu" "$arm" "${args[@]}" > "$out/arm_${cpu}_$beam"
    if ! cmp -s "$out/x86_$beam" "$out/arm_${cpu}_$beam"; then
      echo "beam $beam, QEMU_CPU=$cpu: the AArch64 CLI's lines differ from x86's:"
      diff "$out/x86_$beam" "$out/arm_${cpu}_$beam" | head -20
      exit 1
    fi
    echo "beam $beam, QEMU_CPU=$cpu: $(wc -l < "$out/x86_$beam") lines, as on x86"
  done
done
[[ -s $out/x86_1 ]] || { echo "no lines translated"; exit 1; }
