#!/usr/bin/env bash
# run 34: the fused norm's sum with 16 loads in flight per thread (one round for a row of 4,096;
# STRIX_CUDA_NORM_LOADS=8 the old two), and the gate/up GEMV with SwiGLU fused by one-thread
# fences (STRIX_CUDA_FUSE_SWIGLU=1; run 33's every-thread fences lost 3.5%), A/B on the 1B and 8B;
# every CUDA test; the reference's CPU build on this host (zen4 when the CPU runs it); the issue's
# 8B rows with the defaults.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r34; mkdir -p $R
t0=$SECONDS
grep -m1 "model name" /proc/cpuinfo; for f in amx_int8 avx512_fp16 avx512_bf16 avx512vbmi avx512_vnni; do printf "%s:%s " $f "$(grep -c -m1 -w $f /proc/cpuinfo)"; done; echo
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
small=(--layers 4 --embd 256 --heads 8 --kv-heads 4 --ff 768 --vocab .devcarry/stories260K.gguf)
$S synth --arch llama "${small[@]}" --type q8_0 --seed 1 -o $w/q8.gguf > /dev/null 2>&1
for ngl in 0 99; do timeout 60 $S parity -m $w/q8.gguf -ngl $ngl --tokens 128 2>&1 | grep -E "^\s+(prefill|decode|mixed)" | cut -c1-150 | sed "s/^/default reference, ngl $ngl /"; done | tee $R/q8-default.txt
timeout 170 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
STRIX_CUDA_NORM_LOADS=8 timeout 60 $T --gtest_brief=1 --gtest_filter='CudaFused.*:CudaGemvFused.*:CudaEngine*' 2>&1 | grep -E "^\[  (PASSED|FAILED)" | sed 's/^/[NORM_LOADS=8] /'
for f in "STRIX_CUDA_FUSE_SWIGLU=0" "STRIX_CUDA_FUSE_SWIGLU=1" "STRIX_CUDA_NORM_LOADS=8"; do env $f timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-100 | sed "s/^/[$f] /"; done
tg() { echo "== $1"; env "${@:2}" timeout 25 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg|rror|refus" | tee -a $R/speed.txt; }
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt && break; sleep 2; done
M=$w/l1b.gguf
for rep in 1 2; do
  tg "1B defaults (norm loads 16)" STRIX_CUDA_FUSE_SWIGLU=0
  tg "1B NORM_LOADS=8" STRIX_CUDA_NORM_LOADS=8
  tg "1B FUSE_SWIGLU=1" STRIX_CUDA_FUSE_SWIGLU=1
done
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
M=$w/l8b.gguf
for rep in 1 2 3; do
  tg "8B defaults (norm loads 16)" STRIX_CUDA_FUSE_SWIGLU=0
  tg "8B NORM_LOADS=8" STRIX_CUDA_NORM_LOADS=8
  tg "8B FUSE_SWIGLU=1" STRIX_CUDA_FUSE_SWIGLU=1
done
echo "A/B done at $((SECONDS - t0)) s"
b() { local tag=$1; shift; echo "== $tag"; "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus" | tee -a $R/speed.txt; }
b "8B pp512 pp4096 tg128" timeout 50 $S bench -m $M -ngl 99 -p 512,4096 -n 128 -r 3 --out-json $R/bench-8b.json
b "8B tg128 @ d4096" timeout 30 $S bench -m $M -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json
[ $((SECONDS - t0)) -lt 470 ] && b "8B engine" timeout 80 $S bench-serve -m $M -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run34.tgz -C $OUT r34 && rm -rf $R
