#!/usr/bin/env bash
# run 20: attention_decode for a batch of one token per sequence (batched decode). Kernel and engine
# tests, then the 1B's batched decode with it and without (STRIX_CUDA_BATCH_DECODE=0).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r20; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 >> $R/mk.txt 2>&1; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
timeout 60 $T --gtest_filter='CudaPaged.*:CudaEngine.*:CudaFused.*:CudaF16*:CudaFlash*' > $R/tests.txt 2>&1; echo "tests rc $?"
grep -E "^\[ +(PASSED|FAILED) |Failure|Expected|Which" $R/tests.txt | head -12
timeout 30 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -2 | tee $R/greedy.txt
wait; grep made $R/mk.txt
M=$w/l1b-q4_k_m.gguf
for e in 1 0; do
  echo "== STRIX_CUDA_BATCH_DECODE=$e"; STRIX_CUDA_BATCH_DECODE=$e timeout 30 $S batched-bench -m $M -ngl 99 -npp 128 -ntg 128 -npl 1,16,64 -r 1 --out-json $R/l1b-batched-$e.json 2>&1 | grep -E "^\| +[0-9]"
done | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run20.tgz -C $OUT r20 && rm -rf $R
