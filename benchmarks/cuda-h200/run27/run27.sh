#!/usr/bin/env bash
# run 27: the decode step's host side (page-locked ids / logits / top lists, one upload per
# micro-batch), the decode attention with 8 K rows and 8 V rows in flight per warp step, the
# fused norm with 8 loads in flight per thread, the GEMV's first weight loads before its
# griddep_wait (PDL overlap). Every kernel test, then tg128 A/B on the 1B and 8B, then ncu.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r27; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|rror|refus" ; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-120
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt 2>/dev/null && break; sleep 2; done
M1=$w/l1b.gguf; M8=$w/l8b.gguf
tg() { b "$1" "${@:2}" timeout 20 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; }
M=$M1
for rep in 1 2; do
  tg "1B old host+attn (PINNED=0 ATTN_LOADS=0)" STRIX_CUDA_PINNED=0 STRIX_CUDA_ATTN_LOADS=0
  tg "1B pinned only" STRIX_CUDA_ATTN_LOADS=0
  tg "1B attn loads only" STRIX_CUDA_PINNED=0
  tg "1B new (defaults)"
  tg "1B new + PDL=2" STRIX_CUDA_PDL=2
done
tg "1B new, TOP_LOGITS=0" STRIX_CUDA_TOP_LOGITS=0
b "1B pp512 + tg128 defaults" timeout 25 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
echo "1B done at $((SECONDS - t0)) s"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
ok 300 && timeout 100 $NCU --clock-control none --csv --metrics gpu__time_duration.sum,launch__grid_size --launch-count 420 \
    $S bench -m $M1 -ngl 99 -p 0 -n 2 -r 1 > $R/ncu-1b.csv 2> $R/ncu-1b.err; echo "ncu 1b rc=$? at $((SECONDS - t0)) s"
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 2; done
grep -E "made|rror" $R/mk.txt
M=$M8
for rep in 1 2; do
  ok 480 && tg "8B old host+attn" STRIX_CUDA_PINNED=0 STRIX_CUDA_ATTN_LOADS=0
  ok 480 && tg "8B new (defaults)"
  ok 480 && tg "8B new + PDL=2" STRIX_CUDA_PDL=2
done
ok 500 && b "8B pp512 + tg128 defaults" timeout 30 $S bench -m $M8 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
ok 520 && b "8B tg128 @ d4096" timeout 30 $S bench -m $M8 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json | tee -a $R/speed.txt
ok 530 && timeout 60 $NCU --clock-control none --csv --metrics gpu__time_duration.sum,launch__grid_size --launch-count 600 \
    $S bench -m $M8 -ngl 99 -p 0 -n 2 -r 1 > $R/ncu-8b.csv 2> $R/ncu-8b.err; echo "ncu 8b rc=$? at $((SECONDS - t0)) s"
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run27.tgz -C $OUT r27 && rm -rf $R
