#!/usr/bin/env bash
# run 26: top_logits with 1,024 threads and 8 loads in flight per thread (run 25 found the 256-thread,
# one-load-at-a-time kernel costing ~0.2-0.3 ms per decode step); the grouped expert GEMM removed.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r26; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf ) > $R/mk.txt 2>&1 &
MK=$!
timeout 60 $T --gtest_brief=1 --gtest_filter='CudaTopLogits*:CudaMoe*:*CudaMoeParity*:CudaEngine*' > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-140 | head -12
timeout 30 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-100
wait $MK; echo "1B made at $((SECONDS - t0)) s"
timeout 25 $S bench -m $w/l1b-q4_k_m.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json 2>&1 | grep -E "\| *(pp|tg)[0-9]|rror" | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
tar czf $OUT/run26.tgz -C $OUT r26 && rm -rf $R
