#!/usr/bin/env bash
# run 14: full ncu sections of the decode GEMVs, the fused attention and the fused norm on the
# 8B-shaped Q4_K_M cut to 4 layers; SM clocks during decode.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build/strix; w=/tmp/w14; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
$S synth --arch llama --layers 4 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b4-f16.gguf > /dev/null 2>&1 && $S quantize $w/l8b4-f16.gguf $w/l8b4.gguf Q4_K_M 16 > /dev/null 2>&1 && rm -f $w/l8b4-f16.gguf
date +%T
nvidia-smi dmon -s pc -d 1 > $OUT/dmon.txt 2>&1 &
DM=$!
$S bench -m $w/l8b4.gguf -ngl 99 -p 0 -n 512 -r 5 2>&1 | grep -E "\| *tg"
kill $DM
date +%T
for spec in "gemv_q_kernel 40 8" "attn_decode_kernel 5 1" "rms_norm_quant_kernel 9 1" "quant_kernel 5 1"; do
  set -- $spec
  timeout 200 ncu --clock-control none --cache-control none --set full --csv --page details -k regex:$1 --launch-skip $2 --launch-count $3 \
    $S bench -m $w/l8b4.gguf -ngl 99 -p 0 -n 8 -r 1 > $OUT/full-$1.csv 2> $OUT/full-$1.err
  echo "ncu $1 rc=$? lines=$(wc -l < $OUT/full-$1.csv)"
done
date +%T
