#!/usr/bin/env bash
# Compares the machine code of every CPU kernel object of two builds (e.g. before
# and after a refactoring that should not change any kernel): for each
# hf_*-<target>-no_runtime.o, the disassembled instruction streams are compared
# with addresses and symbol names removed. Exit 0 when every object is identical.
#   tools/compare_kernel_code.sh OLD_BUILD_DIR NEW_BUILD_DIR
set -euo pipefail
old=${1:?usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR} new=${2:?usage: $0 OLD_BUILD_DIR NEW_BUILD_DIR}
norm() {
  objdump -d --no-show-raw-insn "$1" | grep -P '^\s+[0-9a-f]+:\t' | cut -f2- |
    sed -E 's/<[^>]*>//g; s/0x[0-9a-f]+//g; s/[0-9a-f]{6,}//g'
}
same=0 differ=0 missing=0
for o in "$old"/generators/hf_*-x86-64-linux-*-no_runtime.o; do
  n=$new/generators/$(basename "$o")
  if [[ ! -f $n ]]; then
    echo "only in $old: $(basename "$o")"; missing=$((missing + 1)); continue
  fi
  if cmp -s <(norm "$o") <(norm "$n"); then
    same=$((same + 1))
  else
    differ=$((differ + 1)); echo "differs: $(basename "$o")"
  fi
done
echo "identical: $same, different: $differ, missing: $missing"
[[ $differ == 0 && $missing == 0 ]]
