#!/usr/bin/env bash
# run 15: the leaner Q4_K GEMV (2 rows per warp, branchless scales), Q6_K word loads, the multi-block
# fused norm, the shared RoPE table in the decode attention: kernel tests, then A/B and per-kernel times.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build/strix; w=/tmp/w15; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > /dev/null 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 8 > /dev/null 2>&1 && rm -f $w/l1b-f16.gguf
  $S synth --arch llama --layers 4 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b4-f16.gguf > /dev/null 2>&1 && $S quantize $w/l8b4-f16.gguf $w/l8b4.gguf Q4_K_M 8 > /dev/null 2>&1 && rm -f $w/l8b4-f16.gguf ) &
MK=$!
timeout 300 build/tests/test_backend_cuda --gtest_brief=1 2>&1 | tail -25
timeout 120 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -3
wait $MK; ls -la $w; date +%T
for r in 2 1 2 1; do
  for m in l1b l8b4; do
    echo "== ROWS=$r $m"; STRIX_CUDA_GEMV_ROWS=$r $S bench -m $w/$m.gguf -ngl 99 -p 512 -n 128 -r 3 2>&1 | grep -E "\| *(tg|pp)"
  done
done
$S bench -m $w/l1b.gguf -ngl 99 -p 0 -n 128 -d 4096 -r 2 2>&1 | grep -E "\| *tg"
M=gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size
timeout 200 ncu --clock-control none --cache-control none --csv --metrics $M --launch-count 320 $S bench -m $w/l8b4.gguf -ngl 99 -p 0 -n 8 -r 1 > $OUT/ncu-l8b4.csv 2> $OUT/ncu-l8b4.err
timeout 200 ncu --clock-control none --cache-control none --csv --metrics $M --launch-count 700 $S bench -m $w/l1b.gguf -ngl 99 -p 0 -n 8 -r 1 > $OUT/ncu-l1b.csv 2> $OUT/ncu-l1b.err
date +%T
