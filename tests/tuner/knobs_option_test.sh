#!/usr/bin/env bash
# The build's knob choice (HALFORMER_KNOBS, schedules/CMakeLists.txt): configure
# says which knob file the CPU kernels are built with and why; `defaults` gives
# the hand defaults whatever the hardware (faked with HALFORMER_CPUINFO), a
# missing file is a configure error naming it.
#   knobs_option_test.sh CMAKE SOURCE_DIR HALIDE_ROOT
set -u
cmake=$1 src=$2 halide=$3
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'model name\t: Fake CPU A\nflags\t\t: fpu sse4_1 avx avx2 fma\n' > "$tmp/cpuinfo-a"
printf 'model name\t: Fake CPU B\nflags\t\t: fpu sse4_1 avx avx2 avx512f fma\n' > "$tmp/cpuinfo-b"
configure() { # configure CPUINFO KNOBS: configure's output
  HALFORMER_CPUINFO="$1" "$cmake" -S "$src" -B "$tmp/build" -G Ninja -DHalide_ROOT="$halide" -DBUILD_TESTING=OFF \
    -DHALFORMER_KNOBS="$2" 2>&1
}
knob_line() { grep "halformer: CPU kernel knobs " <<<"$1"; }

defaults=$src/schedules/knobs/x86-64.json
for cpu in a b; do
  out=$(configure "$tmp/cpuinfo-$cpu" defaults) || fail "configure with defaults on CPU $cpu: $out"
  line=$(knob_line "$out")
  [[ $line == *"(HALFORMER_KNOBS=defaults): $defaults: the hand defaults; nothing about this machine is read"* ]] ||
    fail "defaults on CPU $cpu: '$line'"
  chosen=$(grep -o '"build_knob_file": "[^"]*"' "$tmp/build/share/halformer/tuner_paths.json")
  [[ $chosen == "\"build_knob_file\": \"$defaults\"" ]] || fail "defaults on CPU $cpu builds with $chosen"
done

out=$(configure "$tmp/cpuinfo-a" host) || fail "configure with host: $out"
line=$(knob_line "$out")
[[ $line == *"(HALFORMER_KNOBS=host): $tmp/build/share/halformer/knobs.json: this machine's tuned knob file"* ]] ||
  fail "host: '$line'"

cp "$defaults" "$tmp/mine.json"
out=$(configure "$tmp/cpuinfo-a" "$tmp/mine.json") || fail "configure with a file: $out"
[[ $(knob_line "$out") == *"$tmp/mine.json: the knob file named"* ]] || fail "a file: '$(knob_line "$out")'"

out=$(configure "$tmp/cpuinfo-a" "$tmp/missing.json") && fail "a missing knob file was accepted"
grep -q "HALFORMER_KNOBS=$tmp/missing.json: no such knob file" <<<"$out" || fail "missing file message: '$out'"

echo "knobs option tests: $failures failures"
exit $((failures != 0))
