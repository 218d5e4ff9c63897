#!/usr/bin/env bash
# run 29: top_logits' scratch laid out for its capacity (in run 28 a launch of another row count read
# stale counters and flags: the engine's greedy rows fell back to full-row copies, 8B c64 1,741 t/s);
# the norm weight and the decode attention's earlier cells (L2 prefetch) before griddep_wait; A/B of the
# one-column Q6_K GEMV layouts (STRIX_CUDA_GEMV_Q6, STRIX_CUDA_Q6_STAGE=0) and of the GEMV with
# the next step loaded before the products (STRIX_CUDA_GEMV_PIPE=1).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r29; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|^\| +[0-9]|rror|refus" ; }
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-120
STRIX_CUDA_PDL=0 timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-120
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt 2>/dev/null && break; sleep 2; done
M1=$w/l1b.gguf; M8=$w/l8b.gguf
tg() { b "$1" "${@:2}" timeout 20 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; }
M=$M1
for rep in 1 2; do
  tg "1B defaults"
  tg "1B GEMV_Q6=rows2" STRIX_CUDA_GEMV_Q6=rows2
  tg "1B GEMV_Q6=plain" STRIX_CUDA_GEMV_Q6=plain
  tg "1B Q6_STAGE=0" STRIX_CUDA_Q6_STAGE=0
  tg "1B GEMV_PIPE=1" STRIX_CUDA_GEMV_PIPE=1
done
tg "1B PDL=0" STRIX_CUDA_PDL=0
b "1B pp512 + tg128 defaults" timeout 25 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
b "1B tg128 @ d4096" timeout 25 $S bench -m $M1 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-1b-d4096.json | tee -a $R/speed.txt
b "1B engine 64 streams" timeout 40 $S bench-serve -m $M1 -ngl 99 --no-compare -c 64 -p 128 -n 128 -r 1 | tee -a $R/speed.txt
echo "1B done at $((SECONDS - t0)) s"
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 2; done
grep -E "made|rror" $R/mk.txt
M=$M8
ok 300 && b "8B engine 16/64 streams" timeout 80 $S bench-serve -m $M8 -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json | tee -a $R/speed.txt
for rep in 1 2; do
  ok 430 && tg "8B defaults"
  ok 430 && tg "8B GEMV_Q6=rows2" STRIX_CUDA_GEMV_Q6=rows2
  ok 430 && tg "8B GEMV_Q6=plain" STRIX_CUDA_GEMV_Q6=plain
  ok 430 && tg "8B Q6_STAGE=0" STRIX_CUDA_Q6_STAGE=0
  ok 430 && tg "8B GEMV_PIPE=1" STRIX_CUDA_GEMV_PIPE=1
done
ok 480 && b "8B pp512 + tg128 defaults" timeout 30 $S bench -m $M8 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
ok 500 && b "8B tg128 @ d4096" timeout 30 $S bench -m $M8 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run29.tgz -C $OUT r29 && rm -rf $R
