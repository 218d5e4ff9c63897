#!/usr/bin/env bash
# run 16: scripts/gpu-check.sh (kernel tests, parity) and the speed rows with the run-15 kernels and
# the GEMV layouts by launch size; A/B against STRIX_CUDA_GEMV_MODE=plain and STRIX_CUDA_PDL=1; the 8B
# at depth 4096 (128-cell splits) and batched decode. Optional steps are skipped past 450 s.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build/strix; w=/tmp/strix-gpu-check; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r16; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt 450 ]; }
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > /dev/null 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 14 > /dev/null 2>&1 && rm -f $w/l1b-f16.gguf
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf > /dev/null 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 14 > /dev/null 2>&1 && rm -f $w/l8b-f16.gguf ) &
MK=$!
OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=build/tests/test_backend_cuda STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 240 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
tail -32 $R/check.txt; echo "checks done at $((SECONDS - t0)) s"
wait $MK; echo "models done at $((SECONDS - t0)) s"; ls -la $w/*.gguf | tail -3
OUT=$R/speed STRIX_BIN=$S STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 100 bash scripts/gpu-check.sh --speed-only --8b > $R/speed.txt 2>&1
grep -E "GPU|\| *(tg|pp)|of the copy" $R/speed.txt; echo "speed done at $((SECONDS - t0)) s"
for mode in plain auto; do
  for m in l1b l8b; do
    ok || continue
    echo "== GEMV_MODE=$mode $m"; STRIX_CUDA_GEMV_MODE=$mode timeout 40 $S bench -m $w/$m-q4_k_m.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg"
  done
done | tee $R/ab.txt
for m in l1b l8b; do
  ok || continue
  echo "== STRIX_CUDA_PDL=1 $m"; STRIX_CUDA_PDL=1 timeout 40 $S bench -m $w/$m-q4_k_m.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg"
done | tee -a $R/ab.txt
ok && timeout 60 $S bench -m $w/l8b-q4_k_m.gguf -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-l8b-d4096.json 2>&1 | grep -E "\| *tg"
ok && timeout 60 $S batched-bench -m $w/l8b-q4_k_m.gguf -ngl 99 -npp 128 -ntg 128 -npl 1,16,64 -r 1 --out-json $R/batched-l8b.json 2>&1 | tail -4
echo "all done at $((SECONDS - t0)) s"
tar czf $OUT/run16.tgz -C $OUT r16 && rm -rf $R
