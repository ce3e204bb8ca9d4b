#!/usr/bin/env bash
# The model on OpenCL (the GPU schedules, run by PoCL here) against the CPU runtime
# on every parity fixture: greedy, beam-4 and sampled tokens identical, forward logits and
# encoder output within 1e-4 of the CPU's (relative to their RMS; float32 kernels
# with different reduction orders differ by ~1e-6). Also: --device auto never picks
# an OpenCL CPU device, and a device that is absent is a clear error.
set -u
bin=$1 fixtures=$2
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

for model in "$fixtures"/*/; do
  model=${model%/}
  name=$(basename "$model")
  input=$(/usr/bin/python3 -c "
import json, numpy as np; e = json.load(open('$model/expected.json')); s = np.load('$model/src.npy')
print('\n'.join(' '.join(map(str, s[b, :n])) for b, n in enumerate(e['src_lengths'])))")
  for beam in 1 4; do
    cpu=$("$bin" run --model "$model" --max-len 12 --beam $beam --device cpu <<<"$input") || fail "$name: cpu run"
    ocl=$("$bin" run --model "$model" --max-len 12 --beam $beam --device opencl <<<"$input") || fail "$name: opencl run"
    [[ -n "$cpu" && "$cpu" == "$ocl" ]] || fail "$name beam $beam: opencl printed '$ocl', cpu '$cpu'"
  done
  # sampling (hf_sample_pick on the device): the same seed draws the same tokens
  sampling=(--max-len 12 --sampling-topk 5 --sampling-topp 0.9 --sampling-temperature 0.8 --seed 5
    --repetition-penalty 1.3 --no-repeat-ngram-size 2)
  cpu=$("$bin" run --model "$model" "${sampling[@]}" --device cpu <<<"$input") || fail "$name: cpu sampling"
  ocl=$("$bin" run --model "$model" "${sampling[@]}" --device opencl <<<"$input") || fail "$name: opencl sampling"
  [[ -n "$cpu" && "$cpu" == "$ocl" ]] || fail "$name sampling: opencl printed '$ocl', cpu '$cpu'"
  tmp=$(mktemp -d)
  for d in cpu opencl; do
    "$bin" forward --model "$model" --src "$model/src.npy" --tgt "$model/tgt.npy" --device $d \
      --out-logits "$tmp/l_$d.npy" --out-memory "$tmp/m_$d.npy" || fail "$name: forward on $d"
  done
  /usr/bin/python3 -c "
import numpy as np, sys
for n in 'lm':
    a, b = np.load('$tmp/%s_opencl.npy' % n), np.load('$tmp/%s_cpu.npy' % n)
    err = np.abs(a - b).max() / np.sqrt((b ** 2).mean())
    if a.shape != b.shape or not err < 1e-4:
        sys.exit('%s: opencl differs from cpu by %g' % (n, err))" || fail "$name: forward on opencl"
  rm -rf "$tmp"
done

model=$fixtures/post_ln_relu
if "$bin" info | grep -q "cuda: usable"; then
  echo "note: this machine has a CUDA device; the missing-device error is checked on machines without one"
else
  out=$("$bin" run --model "$model" --device cuda <<<"3 4" 2>&1) && fail "--device cuda succeeded without a CUDA device"
  grep -q "device cuda: no CUDA" <<<"$out" || fail "--device cuda printed '$out'"
fi
out=$("$bin" run --model "$model" --device auto --max-len 3 <<<"3 4" 2>&1) || fail "--device auto: $out"
if ! "$bin" info | grep -q "cuda: usable"; then
  grep -q "device auto: .*running on the CPU" <<<"$out" || fail "--device auto did not say it fell back: '$out'"
fi
echo "device parity tests: $failures failures"
exit $((failures != 0))
