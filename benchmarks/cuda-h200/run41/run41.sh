#!/usr/bin/env bash
# run 41: the session's code (decode attention: earlier cells staged in shared memory, two
# blocks per KV head; the fused norm's own element with its sum; Q4_K high nibbles unshifted):
# every CUDA test, stories260K greedy, the GEMV split layout A/B (STRIX_CUDA_GEMV_SPLIT_FROM /
# _WARPS), and the issue's rows (8B and 1B Q4_K_M: tg128, pp512, tg128 @ d4096, engine 16/64).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r41; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.txt | cut -c1-100 | head -14
STRIX_CUDA_GEMV_SPLIT_FROM=4096 STRIX_CUDA_GEMV_SPLIT_WARPS=4 timeout 60 $T --gtest_brief=1 --gtest_filter='*Gemv*:*Fused*:*Engine*:*IntegerGemv*' > $R/tests-split.txt 2>&1; echo "tests split4 rc $?"; grep -E "^\[  (PASSED|FAILED) " $R/tests-split.txt | head -2
timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | tee $R/greedy.txt
for i in $(seq 1 150); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
head -1 $R/mk.txt
b() { local tag=$1; shift; local out; out=$(env "$@" timeout 40 $S bench -m $M -ngl 99 $B 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *(tg|pp)' | awk -F'|' '{print $(NF-2) $(NF-1)}' | tr '\n' ' ') | $(echo "$out" | grep -E 'rror|of the copy' | head -3 | tr '\n' ' ')"; }
M=$w/l8b.gguf
{
B="-p 0 -n 128 -r 3"
for rep in 1 2; do
  b "8B defaults" X=1
  b "8B split from 4096" STRIX_CUDA_GEMV_SPLIT_FROM=4096
  b "8B split from 4096, 4 warps" STRIX_CUDA_GEMV_SPLIT_FROM=4096 STRIX_CUDA_GEMV_SPLIT_WARPS=4
  b "8B split 4 warps" STRIX_CUDA_GEMV_SPLIT_WARPS=4
done
} 2>&1 | tee $R/speed.txt
echo "A/B done at $((SECONDS - t0)) s"
c() { local tag=$1; shift; echo "== $tag"; "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus|of the copy" | tee -a $R/speed.txt; }
c "8B pp512 tg128" timeout 40 $S bench -m $w/l8b.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json
c "8B tg128 @ d4096" timeout 40 $S bench -m $w/l8b.gguf -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json
c "8B engine" timeout 100 $S bench-serve -m $w/l8b.gguf -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json
rm -f $w/l8b.gguf
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt && break; sleep 2; done
tail -1 $R/mk.txt
c "1B pp512 tg128" timeout 40 $S bench -m $w/l1b.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json
[ $((SECONDS - t0)) -lt 480 ] && c "1B engine" timeout 50 $S bench-serve -m $w/l1b.gguf -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l1b-serve.json
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run41.tgz -C $OUT r41 && rm -rf $R
