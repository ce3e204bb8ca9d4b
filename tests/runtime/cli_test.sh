#!/usr/bin/env bash
# The halformer CLI end to end on a fixture model: help, run (greedy equals the
# float64 reference's tokens), forward (equals PyTorch's logits), info, and its
# errors (unknown option, empty line, bad token, missing file, sampling options)
# with messages, sampling seeds and --target-prefix files.
set -u
bin=$1 fixtures=$2
model=$fixtures/post_ln_relu
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
expect_error() { # expect_error "message part" command...
  local want=$1; shift
  local out; out=$("$@" 2>&1) && fail "succeeded: $*" && return
  grep -qF -- "$want" <<<"$out" || fail "'$*' printed '$out', not '$want'"
}

"$bin" --help >/dev/null || fail "--help"
for c in run forward info; do "$bin" $c --help | grep -q -- "--" || fail "$c --help"; done
expect_error "bogus" "$bin" run --model "$model" --bogus
expect_error "input line 2 is empty" "$bin" run --model "$model" --input <(printf '3 4\n\n5\n')
expect_error "input line 1: 'x7' is not a token id" "$bin" run --model "$model" --input <(printf 'x7\n')
expect_error "input line 2: token id 99 is outside the source vocabulary" "$bin" run --model "$model" --input <(printf '3\n3 99\n')
expect_error "cannot open" "$bin" run --model /nonexistent --input <(printf '3\n')
expect_error "input line 1 has 4 tokens, more than the maximum 3" "$bin" run --model "$model" --max-source-len 3 --input <(printf '3 4 5 6\n')
expect_error "--nbest 3 exceeds --beam 2" "$bin" run --model "$model" --beam 2 --nbest 3 --input <(printf '3\n')
expect_error "sampling_topp must be in (0, 1]" "$bin" run --model "$model" --sampling-topk 0 --sampling-topp 1.5 --input <(printf '3\n')
expect_error "takes beam 1" "$bin" run --model "$model" --sampling-topk 5 --beam 4 --input <(printf '3\n')
# Options are checked before any input is read: with no input at all, too.
expect_error "repetition_penalty must be > 0" "$bin" run --model "$model" --repetition-penalty 0 --input /dev/null
# Sampling: a seed repeats its output, at any thread count; other seeds draw anew.
sample() { "$bin" run --model "$model" --max-len 12 --sampling-topk 0 --sampling-temperature 1.5 "$@" <<<$'5 9 3 2\n4 8 2\n7 7 2'; }
first=$(sample --seed 5) || fail "run --seed 5"
[[ "$(sample --seed 5 --threads 1)" == "$first" ]] || fail "--seed 5 printed another output with one thread"
others=$(for s in 6 7 8; do sample --seed $s; done)
[[ "$others" != "$first"$'\n'"$first"$'\n'"$first" ]] || fail "seeds 6-8 printed seed 5's output"

# --target-prefix: line N's ids start line N's output; an empty line leaves its line alone.
plain=$("$bin" run --model "$model" --max-len 10 <<<$'5 9 3 2\n4 8 2') || fail "run"
prefixed=$("$bin" run --model "$model" --max-len 10 --target-prefix <(printf '6 7\n\n') <<<$'5 9 3 2\n4 8 2') ||
  fail "run --target-prefix"
[[ $(sed -n 1p <<<"$prefixed") == "6 7 "* ]] || fail "--target-prefix '6 7' printed '$(sed -n 1p <<<"$prefixed")'"
[[ $(sed -n 2p <<<"$prefixed") == "$(sed -n 2p <<<"$plain")" ]] || fail "an empty --target-prefix line changed line 2"
expect_error "has 1 lines: none for input line 2" "$bin" run --model "$model" --target-prefix <(printf '6\n') \
  --input <(printf '3\n4\n')
expect_error "--target-prefix line 1: 'x' is not a token id" "$bin" run --model "$model" --target-prefix <(printf 'x\n') \
  --input <(printf '3\n')
expect_error "cannot open --target-prefix" "$bin" run --model "$model" --target-prefix /nonexistent --input <(printf '3\n')

# Greedy tokens of the fixture's sentences equal the reference decoder's.
want=$(/usr/bin/python3 -c "
import json; e = json.load(open('$model/expected.json'))
print('\n'.join(' '.join(map(str, g)) for g in e['greedy']))")
input=$(/usr/bin/python3 -c "
import json, numpy as np; e = json.load(open('$model/expected.json')); s = np.load('$model/src.npy')
print('\n'.join(' '.join(map(str, s[b, :n])) for b, n in enumerate(e['src_lengths'])))")
got=$("$bin" run --model "$model" --max-len 10 --threads 1 <<<"$input") || fail "run"
[[ "$got" == "$want" ]] || fail "run printed '$got', expected '$want'"
# --profile: the same output, and the time table on stderr.
errfile=$(mktemp)
got=$("$bin" run --model "$model" --max-len 10 --threads 1 --profile <<<"$input" 2>"$errfile") || fail "run --profile"
[[ "$got" == "$want" ]] || fail "run --profile printed '$got', expected '$want'"
for row in "encode   embedding" "decode   logits" "(host work)" "decode steps:"; do
  grep -qF -- "$row" "$errfile" || fail "run --profile: no '$row' in: $(cat "$errfile")"
done
rm -f "$errfile"
nbest=$("$bin" run --model "$model" --max-len 10 --beam 3 --nbest 2 <<<"$input" | wc -l)
[[ $nbest == 8 ]] || fail "--nbest 2 printed $nbest lines for 4 inputs"

tmp=$(mktemp -d)
"$bin" forward --model "$model" --src "$model/src.npy" --tgt "$model/tgt.npy" --out-logits "$tmp/l.npy" \
  --out-memory "$tmp/m.npy" || fail "forward"
/usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load('$tmp/l.npy'), np.load('$model/logits.npy')
err = np.abs(a - b).max() / (np.sqrt((b ** 2).mean()))
sys.exit(0 if a.shape == b.shape and err < 1e-4 else 'forward logits differ: %g' % err)" || fail "forward logits"
expect_error "expected an integer array" "$bin" forward --model "$model" --src "$tmp/l.npy" --tgt "$model/tgt.npy" --out-logits "$tmp/x.npy"
rm -rf "$tmp"

"$bin" info | grep -q "kernel ISA" || fail "info"
# --compute-type int8: the same greedy tokens on this fixture (its decisions lead
# by clear margins); info names the int8 kernels and their types.
got=$("$bin" run --model "$model" --max-len 10 --threads 1 --compute-type int8 <<<"$input") || fail "run int8"
[[ "$got" == "$want" ]] || fail "run --compute-type int8 printed '$got', expected '$want'"
info=$("$bin" info --model "$model" --compute-type int8) || fail "info int8"
for line in "compute type int8 on cpu" "qkv_projection_int8: x float32 w_q int8" "ffn_relu_int8:" "logits_int8:" \
  "attention: q float32"; do
  grep -qF -- "$line" <<<"$info" || fail "info --compute-type int8: no '$line' in: $info"
done
expect_error "--compute-type" "$bin" run --model "$model" --compute-type int4 --input <(printf '3\n')
expect_error "mix devices" "$bin" build-lib --target x86,cuda --out "$(mktemp -d)"
expect_error "cuda and opencl only" "$bin" build-lib --target host-metal --out "$(mktemp -d)"
expect_error "--knobs /nonexistent.json: no such knob file" "$bin" build-lib --target x86 --knobs /nonexistent.json --out "$(mktemp -d)"
expect_error "unknown kernel 'nope'" "$bin" build-lib --target x86 --kernels nope --out "$(mktemp -d)"
expect_error "--device" "$bin" run --model "$model" --device tpu --input <(printf '3\n')
# compare puts the OpenCL build of the same kernel (the GPU schedule, on PoCL here) beside the CPU's.
tmp=$(mktemp -d)
out=$("$bin" compare --kernel layernorm --shape d_model=64,t=4,batch=1 --schedules default,opencl --samples 2 \
  --min-ms 1 --out "$tmp" 2>/dev/null) || fail "compare with opencl"
grep -qE "^default +yes" <<<"$out" && grep -qE "^opencl +yes" <<<"$out" || fail "compare rows: $out"
for ext in csv json svg; do
  [[ -s "$tmp/layernorm_batch-1_d_model-64_t-4.$ext" ]] || fail "compare wrote no $ext report: $(ls "$tmp")"
done
grep -q "<svg" "$tmp/layernorm_batch-1_d_model-64_t-4.svg" || fail "compare chart is not SVG"
rm -rf "$tmp"
# compare's peers: oneDNN's matmul of the kernel's own type (u8 x s8 -> s32 for
# an int8 kernel, bfloat16 where the CPU has AVX-512 BF16) beside the sgemm or
# int8 GEMM baseline, each naming what it ran.
kernels="q_projection_int8:u8s8s32 q_projection:f32"
grep -qw avx512_bf16 /proc/cpuinfo && kernels="$kernels q_projection_bf16:bf16"
for kt in $kernels; do
  k=${kt%%:*} type=${kt#*:} tmp=$(mktemp -d)
  out=$("$bin" compare --kernel "$k" --shape d_k=64,heads=8,t=7,batch=1 --schedules default,blas,onednn --samples 2 \
    --min-ms 1 --out "$tmp" 2>/dev/null) || fail "compare $k with its peers"
  grep -qE "^onednn +n/a" <<<"$out" && grep -qE "^blas +n/a" <<<"$out" || fail "compare $k peer rows: $out"
  grep -q "\"source\": *\"oneDNN matmul $type ([^)]*[a-z][^)]*)" "$tmp"/*.json || fail "compare $k: no oneDNN matmul $type source in $(cat "$tmp"/*.json)"
  rm -rf "$tmp"
done
# onednn-fused: the same matmul given each GEMM's epilogue (the FFN's activation
# and hidden layer, its residual), named in the row's source.
tmp=$(mktemp -d)
out=$("$bin" compare --kernel ffn_relu --shape d_model=512,d_ff=2048,t=7,batch=1 --schedules onednn-fused --samples 2 \
  --min-ms 1 --out "$tmp" 2>/dev/null) || fail "compare with onednn-fused"
grep -q "\"source\": *\"oneDNN matmul f32 fused ([^)]*[a-z][^)]*) 7,2048,512,relu+hidden;7,512,2048,residual" \
  "$tmp"/*.json || fail "compare onednn-fused: no fused source in $(cat "$tmp"/*.json)"
# without the default among the rows, "vs default" has nothing to compare with
grep -qE "^onednn-fused +n/a .* -$" <<<"$out" || fail "compare without default: $out"
rm -rf "$tmp"
expect_error "unknown kernel" "$bin" tune --kernel nope --shape t=1 --budget 1s --db "$(mktemp -d)"
expect_error "not a positive duration" "$bin" tune --kernel layernorm --shape t=1 --budget 0s --db "$(mktemp -d)"
expect_error "excludes" "$bin" tune --preset transformer-base --budget 1s --total-budget 1m
# tune --model: every kernel at the model's own shapes (one candidate each: the
# default), then the knob file the build takes holds a set per kernel and bucket,
# from the records at this model's shapes.
tmp=$(mktemp -d)
"$bin" tune --model "$model" --prefill-tokens 6 --batch 3 --trials 1 --finalists 0 --confirm-rounds 0 --samples 2 \
  --min-ms 1 --total-budget 29m --db "$tmp/db" --knob-file "$tmp/knobs.json" >"$tmp/log" 2>&1 ||
  fail "tune --model: $(tail -3 "$tmp/log")"
# The whole run's budget, divided over its 29 pairs (the GEMMs also at decode_wide)
# by their kernels' shares, is printed before it starts.
grep -q "budget: 0:21 to 2:33 per pair (by each kernel's share of a model's run), 29:00 in all" "$tmp/log" ||
  fail "tune prints no total budget: $(head -3 "$tmp/log")"
grep -q "tuned 29 pairs in" "$tmp/log" || fail "tune prints no total time"
/usr/bin/python3 -c "
import json, sys
j = json.load(open('$tmp/knobs.json')); c = json.load(open('$model/config.json'))
assert j['_source']['shapes'] == 29, j['_source']
why = [s['_why'] for s in j['_buckets']['layernorm']['decode'].values()]
want = 'd_model=%d,t=1' % c['d_model']
sys.exit(0 if any(w.startswith('tuned on this machine at') and want in w and 'batch=3' in w for w in why)
         else 'no decode set tuned at the model shape: %s' % why)" || fail "tune --model knob file"
expect_error "Directory does not exist" "$bin" tune --model /nonexistent --db "$tmp/db"
rm -rf "$tmp"
# A knob file written for other schedule revisions is not the base a tune writes
# over: a changed schedule may no longer declare its knobs (the bfloat16 GEMMs'
# dot-product knobs, carried over from a stale file, once broke the next build).
tmp=$(mktemp -d)
/usr/bin/python3 - "$(dirname "$bin")/../share/halformer/knobs.json" "$tmp/knobs.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["logits_bf16"]["avx512"]["dot_outputs"] = 4  # a knob no schedule declares now
j["_source"] = {"hardware": "this one", "revisions": {}}  # written for other revisions
json.dump(j, open(sys.argv[2], "w"))
PY
"$bin" tune --kernel layernorm --shape d_model=64,t=1,batch=3 --trials 1 --finalists 0 --confirm-rounds 0 \
  --samples 2 --min-ms 1 --budget 5m --db "$tmp/db" --knob-file "$tmp/knobs.json" >"$tmp/log" 2>&1 ||
  fail "tune over a stale knob file: $(tail -3 "$tmp/log")"
grep -q "was written for other schedule revisions: rewritten" "$tmp/log" || fail "stale knob file: $(cat "$tmp/log")"
grep -q dot_outputs "$tmp/knobs.json" && fail "the tune kept a stale knob file's knobs"
rm -rf "$tmp"
echo "cli tests: $failures failures"
exit $((failures != 0))
