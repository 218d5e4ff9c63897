#!/usr/bin/env bash
# run 13: where the decode time goes. ncu per-kernel time and DRAM bytes of the decode step,
# on the 1B-shaped Q4_K_M and on an 8B-shaped Q4_K_M cut to 4 layers.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build/strix; w=/tmp/w13; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); echo "ncu: $NCU"
date +%T
$S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > /dev/null 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 > /dev/null 2>&1 && rm -f $w/l1b-f16.gguf
$S synth --arch llama --layers 4 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b4-f16.gguf > /dev/null 2>&1 && $S quantize $w/l8b4-f16.gguf $w/l8b4.gguf Q4_K_M 16 > /dev/null 2>&1 && rm -f $w/l8b4-f16.gguf
ls -la $w; date +%T
for m in l1b l8b4; do
  $S bench -m $w/$m.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg|model"
done
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active
for m in l1b l8b4; do
  date +%T
  timeout 240 $NCU --clock-control none --cache-control none --csv --metrics $M --launch-count 700 \
    $S bench -m $w/$m.gguf -ngl 99 -p 0 -n 8 -r 1 > $OUT/ncu-$m.csv 2> $OUT/ncu-$m.err
  echo "ncu $m rc=$? lines=$(wc -l < $OUT/ncu-$m.csv)"; tail -3 $OUT/ncu-$m.err
done
date +%T
