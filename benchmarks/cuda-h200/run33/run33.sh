#!/usr/bin/env bash
# run 33: (1) is the device host an AMX CPU, and the quantized parity rows against each libggml CPU build
# (the reference now loads the zen4 build on AMX hosts); (2) every CUDA test under the committed defaults,
# with the new fused GEMV (gemv_q_fused: SwiGLU + quantizer in the gate/up GEMV, residual add + RMS norm +
# quantizer after the o / down GEMV); (3) tg128 A/B of the fusions on the 1B and 8B (STRIX_CUDA_FUSE_SWIGLU=0,
# STRIX_CUDA_FUSE_NORM=0); (4) gpu-check --no-speed.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r33; mkdir -p $R
t0=$SECONDS
lscpu | grep -E "Model name|^CPU\(s\)"; echo "amx: $(grep -o -m1 -E 'amx_int8' /proc/cpuinfo || echo none), fp16: $(grep -o -m1 avx512_fp16 /proc/cpuinfo || echo none)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
small=(--layers 4 --embd 256 --heads 8 --kv-heads 4 --ff 768 --vocab .devcarry/stories260K.gguf)
$S synth --arch llama "${small[@]}" --type q8_0 --seed 1 -o $w/q8.gguf > /dev/null 2>&1
for v in zen4 sapphirerapids haswell; do
  for ngl in 0 99; do STRIX_REF_CPU_VARIANT=$v timeout 60 $S parity -m $w/q8.gguf -ngl $ngl --tokens 128 2>&1 | grep -E "^\s+(prefill|decode|mixed)" | cut -c1-150 | sed "s/^/$v ngl $ngl /"; done
done 2>&1 | tee $R/q8-variants.txt
echo "variants done at $((SECONDS - t0)) s"
timeout 170 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
grep -E "CudaGemvFused" $R/tests.txt | head -8
for f in "" "STRIX_CUDA_FUSE_SWIGLU=0 STRIX_CUDA_FUSE_NORM=0"; do env $f timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-100 | sed "s/^/[$f] /"; done
tg() { echo "== $1"; env "${@:2}" timeout 25 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg|rror|refus" | tee -a $R/speed.txt; }
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt && break; sleep 2; done
M=$w/l1b.gguf
for rep in 1 2; do
  tg "1B defaults (fused)"
  tg "1B FUSE_SWIGLU=0 FUSE_NORM=0" STRIX_CUDA_FUSE_SWIGLU=0 STRIX_CUDA_FUSE_NORM=0
done
tg "1B FUSE_NORM=0" STRIX_CUDA_FUSE_NORM=0
tg "1B FUSE_SWIGLU=0" STRIX_CUDA_FUSE_SWIGLU=0
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
M=$w/l8b.gguf
for rep in 1 2; do
  tg "8B defaults (fused)"
  tg "8B FUSE_SWIGLU=0 FUSE_NORM=0" STRIX_CUDA_FUSE_SWIGLU=0 STRIX_CUDA_FUSE_NORM=0
done
tg "8B FUSE_NORM=0" STRIX_CUDA_FUSE_NORM=0
tg "8B FUSE_SWIGLU=0" STRIX_CUDA_FUSE_SWIGLU=0
timeout 60 $S bench -m $M -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json 2>&1 | grep -E "\| *(pp|tg)|rror" | tee -a $R/speed.txt
echo "speed done at $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -lt 400 ] && OUT=$R/check STRIX_BIN=$S STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout $((565 - (SECONDS - t0))) bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "^(ok|FAIL|----)" $R/check/summary.txt 2>/dev/null | cut -c1-110
kill $MK 2>/dev/null
tar czf $OUT/run33.tgz -C $OUT r33 && rm -rf $R
