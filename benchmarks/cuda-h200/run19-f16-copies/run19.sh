#!/usr/bin/env bash
# run 19: the kept f16 weight copies for the GEMM path (STRIX_CUDA_F16_WEIGHTS), on the 1B:
# the new test, then prefill and batched decode with and without the copies, and the per-step
# profile of batched decode (64 sequences).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r19; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 >> $R/mk.txt 2>&1; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
timeout 60 $T --gtest_filter='CudaF16*:CudaPaged.*:CudaEngine.*' > $R/tests.txt 2>&1; echo "tests rc $?"
grep -E "^\[ +(OK|PASSED|FAILED) |Failure" $R/tests.txt | head
wait; grep made $R/mk.txt
M=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|^\| +[0-9]|rror|strix cuda profile|^  [a-z]" ; }
b "1B pp512 tg128 kept" timeout 30 $S bench -m $M -ngl 99 -p 512 -n 128 -r 3 --out-json $R/l1b.json | tee -a $R/speed.txt
b "1B pp512 F16_WEIGHTS=0" STRIX_CUDA_F16_WEIGHTS=0 timeout 30 $S bench -m $M -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/speed.txt
b "1B batched kept" timeout 40 $S batched-bench -m $M -ngl 99 -npp 128 -ntg 128 -npl 1,16,64 -r 1 --out-json $R/l1b-batched.json | tee -a $R/speed.txt
b "1B batched F16_WEIGHTS=0" STRIX_CUDA_F16_WEIGHTS=0 timeout 40 $S batched-bench -m $M -ngl 99 -npp 128 -ntg 128 -npl 64 -r 1 | tee -a $R/speed.txt
b "1B batched 64 profile kept" STRIX_CUDA_PROFILE=1 timeout 40 $S batched-bench -m $M -ngl 99 -npp 128 -ntg 32 -npl 64 -r 1 | tee -a $R/profile.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run19.tgz -C $OUT r19 && rm -rf $R
