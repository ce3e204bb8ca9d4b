#!/usr/bin/env bash
# This machine's knob file (schedules/tools/choose_knobs.cpp, HALFORMER_KNOBS=host):
# this hardware's file in the tuned directory (as `tune` writes it), else the hand
# defaults with this machine's records. Each says which it used.
#   choose_knobs_test.sh CHOOSE DEFAULT_KNOBS SHARE_DIR
set -u
choose=$1 defaults=$2 share=$3
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
tmp=$(mktemp -d)
mkdir -p "$tmp/tuned" "$tmp/db"
touch "$tmp/db/schedules.jsonl"
run() { "$choose" "$tmp/tuned" "$defaults" "$tmp/db" "$share/knob_spaces.json" "$share/kernels.json" "$tmp/out.json"; }

out=$(run) || fail "no tuned file: $out"
grep -q "hand defaults everywhere" <<<"$out" || fail "no tuned file, no records: '$out'"
own=$(grep -o "no [^ ]*\.json for this hardware" <<<"$out" | cut -d' ' -f2)
[[ $own == "$tmp/tuned/"*.json ]] || fail "this hardware's knob file path: '$own'"

# This hardware's tuned file (as tune writes it) is taken as it is, if written for
# the current schedule revisions; else this machine's records are exported.
tuned_file() { # tuned_file CHANGED_SECTION: the file, its revision of that section changed ("": none)
  /usr/bin/python3 - "$defaults" "$own" "$share/knob_spaces.json" "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["layernorm"]["avx2"]["rows_per_task"] = 2
j["layernorm"]["avx2"]["_why"] = "tuned on this machine at batch=3,d_model=64,t=1: 0.001 ms"
revisions = json.load(open(sys.argv[3]))["_revisions"]
if sys.argv[4]:
    revisions[sys.argv[4]] += 1
j["_source"] = {"hardware": "this one", "revisions": revisions}
json.dump(j, open(sys.argv[2], "w"))
PY
}
tuned_file ""
out=$(run) || fail "tuned file: $out"
grep -q "this hardware's tuned knob file): 1 tuned knob sets" <<<"$out" || fail "tuned file: '$out'"
cmp -s "$own" "$tmp/out.json" || fail "the chosen file is not this hardware's"
tuned_file attention
out=$(run) || fail "stale tuned file: $out"
grep -q "written for other schedule revisions (attention)" <<<"$out" || fail "stale tuned file: '$out'"
grep -q "stale .* for this hardware; .*hand defaults everywhere" <<<"$out" || fail "stale tuned file's fallback: '$out'"
tuned_file ""

# The hardware is this machine's identity: a faked one (HALFORMER_CPUINFO) has a
# file of its own, so this one's is not taken.
printf 'model name\t: Fake CPU 9000\nflags\t\t: fpu sse4_1 avx avx2 fma\n' > "$tmp/cpuinfo"
out=$(HALFORMER_CPUINFO="$tmp/cpuinfo" run) || fail "faked hardware: $out"
grep -q "no $tmp/tuned/fake-cpu-9000-avx2-[0-9]*c-[0-9a-f]*\.json for this hardware" <<<"$out" ||
  fail "the faked hardware's knob file: '$out'"
rm -rf "$tmp"
echo "choose knobs tests: $failures failures"
exit $((failures != 0))
