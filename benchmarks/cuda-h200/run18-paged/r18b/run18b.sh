#!/usr/bin/env bash
# run 18b: the block tables uploaded only when they change and read through the read-only cache:
# the paged tests again, then the 1B's decode against run 18 (1,087) and run 17 (1,140).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r18b; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 >> $R/mk.txt 2>&1; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
timeout 60 $T --gtest_filter='CudaPaged.*:CudaEngine.*:CudaFused.*:CudaFlash*' > $R/tests.txt 2>&1; echo "tests rc $?"
grep -E "^\[ +(PASSED|FAILED) |Failure" $R/tests.txt | head
wait
grep made $R/mk.txt
timeout 60 $S bench -m $w/l1b-q4_k_m.gguf -ngl 99 -p 512 -n 128 -r 5 --out-json $R/l1b.json 2>&1 | grep -E "\| *(pp|tg)" | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run18b.tgz -C $OUT r18b && rm -rf $R
