#!/usr/bin/env bash
# run 36: the committed defaults (the fused norm's 16 loads for rows over 2,048; no fused GEMV
# epilogues), every CUDA test, and the 8B tg128 / pp512 with this run's copy bandwidth (gpu-check left out: device time).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r36; mkdir -p $R
t0=$SECONDS
grep -m1 "model name" /proc/cpuinfo; for f in amx_int8 avx512_fp16 avx512_bf16 avx512vbmi avx512_vnni; do printf "%s:%s " $f "$(grep -c -m1 -w $f /proc/cpuinfo)"; done; echo
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
timeout 170 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) " $R/tests.txt | cut -c1-150 | head -4
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
for rep in 1 2 3; do timeout 25 $S bench -m $w/l8b.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg|rror"; done | tee $R/speed.txt
timeout 50 $S bench -m $w/l8b.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json 2>&1 | grep -E "\| *(pp|tg)|rror" | tee -a $R/speed.txt
rm -f $w/l8b.gguf
echo "speed done at $((SECONDS - t0)) s"
echo "gpu-check left out (device time)"


tar czf $OUT/run36.tgz -C $OUT r36 && rm -rf $R
