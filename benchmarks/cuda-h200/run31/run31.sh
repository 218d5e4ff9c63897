#!/usr/bin/env bash
# run 31: two last A/Bs for the 8B's decode step: four rows per warp on the big GEMVs (gate/up, the
# output head: STRIX_CUDA_GEMV_ROWS=4) and 64-cell decode-attention splits (STRIX_CUDA_DECODE_SPLIT=64),
# with the GEMV kernel tests under the four-row layout.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r31; mkdir -p $R
t0=$SECONDS
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|rror|refus" ; }
wait_for() { for i in $(seq 1 150); do grep -q "$1 made" $R/mk.txt 2>/dev/null && return 0; sleep 2; done; return 1; }
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
STRIX_CUDA_GEMV_ROWS=4 timeout 60 $T --gtest_brief=1 --gtest_filter='CudaKernels.*:CudaFused.*:CudaEngine*' > $R/tests-rows4.txt 2>&1; echo "tests (rows 4) rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests-rows4.txt | cut -c1-150 | head -8
STRIX_CUDA_GEMV_ROWS=4 timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-120
tg() { b "$1" "${@:2}" timeout 20 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; }
wait_for 1B; M=$w/l1b.gguf
for rep in 1 2; do
  tg "1B defaults"
  tg "1B GEMV_ROWS=4" STRIX_CUDA_GEMV_ROWS=4
  tg "1B DECODE_SPLIT=64" STRIX_CUDA_DECODE_SPLIT=64
done
wait_for 8B; M=$w/l8b.gguf
for rep in 1 2; do
  tg "8B defaults"
  tg "8B GEMV_ROWS=4" STRIX_CUDA_GEMV_ROWS=4
  tg "8B DECODE_SPLIT=64" STRIX_CUDA_DECODE_SPLIT=64
  tg "8B both" STRIX_CUDA_GEMV_ROWS=4 STRIX_CUDA_DECODE_SPLIT=64
done
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run31.tgz -C $OUT r31 && rm -rf $R
