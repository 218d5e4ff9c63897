#!/usr/bin/env bash
# run 35: the fused norm keeps its own element from its sum's loads (STRIX_CUDA_NORM_KEEP=0 reads it
# again after the block sum) and takes 16 loads in flight for rows over 2,048 (STRIX_CUDA_NORM_LOADS=8),
# A/B on the 8B and 1B; every CUDA test under these defaults; the rows for both models.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r35; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
timeout 170 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
for f in "STRIX_CUDA_NORM_KEEP=0" "STRIX_CUDA_NORM_LOADS=8"; do env $f timeout 60 $T --gtest_brief=1 --gtest_filter='CudaFused.*:CudaEngine*' 2>&1 | grep -E "^\[  (PASSED|FAILED)" | sed "s/^/[$f] /"; done
timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-100
tg() { echo "== $1"; env "${@:2}" timeout 25 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 2>&1 | grep -E "\| *tg|rror|refus" | tee -a $R/speed.txt; }
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
M=$w/l8b.gguf
for rep in 1 2 3; do
  tg "8B defaults (keep, 16 loads)"
  tg "8B NORM_KEEP=0" STRIX_CUDA_NORM_KEEP=0
  tg "8B NORM_KEEP=0 NORM_LOADS=8 (run 33's norm)" STRIX_CUDA_NORM_KEEP=0 STRIX_CUDA_NORM_LOADS=8
done
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt && break; sleep 2; done
M=$w/l1b.gguf
for rep in 1 2; do
  tg "1B defaults (keep, 8 loads at 2,048)"
  tg "1B NORM_KEEP=0" STRIX_CUDA_NORM_KEEP=0
done
echo "A/B done at $((SECONDS - t0)) s"
b() { local tag=$1; shift; echo "== $tag"; "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus" | tee -a $R/speed.txt; }
b "8B pp512 pp4096 tg128" timeout 50 $S bench -m $w/l8b.gguf -ngl 99 -p 512,4096 -n 128 -r 3 --out-json $R/bench-8b.json
b "8B tg128 @ d4096" timeout 30 $S bench -m $w/l8b.gguf -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json
b "1B pp512 pp4096 tg128" timeout 40 $S bench -m $w/l1b.gguf -ngl 99 -p 512,4096 -n 128 -r 3 --out-json $R/bench-1b.json
b "1B tg128 @ d4096" timeout 25 $S bench -m $w/l1b.gguf -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-1b-d4096.json
[ $((SECONDS - t0)) -lt 420 ] && b "8B engine" timeout 80 $S bench-serve -m $w/l8b.gguf -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json
[ $((SECONDS - t0)) -lt 500 ] && b "1B engine" timeout 50 $S bench-serve -m $w/l1b.gguf -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l1b-serve.json
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run35.tgz -C $OUT r35 && rm -rf $R
