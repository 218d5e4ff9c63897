#!/usr/bin/env bash
# run 43: exact numerics (--exact, backend/cuda/exact.h) against libllama's CPU: parity of the
# gpu-check models (llama / qwen2 / qwen3 4 x 256: F16, Q8_0, libllama's Q4_K_M), stories260K F32
# and its Q8_0, greedy 200, the negative control; the speed of exact numerics on a 1B-shaped
# Q4_K_M; every CUDA test (the fast path's code moved).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r43; mkdir -p $R
t0=$SECONDS
ST=$STRIX_STORIES
( taskset -c 0-7 $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk1b.txt 2>&1 && taskset -c 0-7 $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 8 >> $R/mk1b.txt 2>&1; echo "1B made at $((SECONDS - t0)) s" >> $R/mk1b.txt ) &
small=(--layers 4 --embd 256 --heads 8 --kv-heads 4 --ff 768 --vocab $ST)
for arch in llama qwen2 qwen3; do
  extra=(); [ "$arch" = qwen3 ] && extra=(--head-dim 64)
  for t in f16 q8_0; do $S synth --arch $arch "${small[@]}" "${extra[@]}" --type $t --seed 1 -o $w/$arch-$t.gguf >> $R/log.txt 2>&1; done
  $S quantize $w/$arch-f16.gguf $w/$arch-q4_k_m.gguf Q4_K_M >> $R/log.txt 2>&1
done
$S synth --arch llama "${small[@]}" --type q8_0 --seed 2 -o $w/llama-q8_0-seed2.gguf >> $R/log.txt 2>&1
$S quantize $ST $w/stories-Q8_0.gguf Q8_0 >> $R/log.txt 2>&1
echo "models at $((SECONDS - t0)) s"
P="taskset -c 8-15"
par() { echo "== $*"; $P timeout 120 $S parity "$@" 2>&1 | grep -E "^\s+(prefill|decode|mixed|greedy)|verdict|rror|efus" | cut -c1-220; }
{
for arch in llama qwen2 qwen3; do for t in f16 q8_0 q4_k_m; do par -m $w/$arch-$t.gguf -ngl 99 --exact --tokens 128; done; done
par -m $ST -ngl 99 --exact --tokens 256
par -m $w/stories-Q8_0.gguf -ngl 99 --exact --tokens 256
par -m $ST -ngl 99 --exact --greedy 200
par -m $w/stories-Q8_0.gguf -ngl 99 --exact --greedy 200
par -m $w/llama-q8_0.gguf -ngl 2 --exact --tokens 128
echo "-- the fast path on the same model, for comparison"
par -m $w/llama-q8_0.gguf -ngl 99 --tokens 128
par -m $w/llama-q4_k_m.gguf -ngl 99 --tokens 128
echo "-- negative control (must FAIL): other weights"
par -m $w/llama-q8_0.gguf --strix-model $w/llama-q8_0-seed2.gguf -ngl 99 --exact --tokens 64 --mode decode
echo "-- trace, llama q8_0 exact decode"
$P timeout 60 $S parity -m $w/llama-q8_0.gguf -ngl 99 --exact --tokens 48 --mode decode --trace 2>&1 | tail -12
} 2>&1 | tee $R/parity.txt
echo "parity at $((SECONDS - t0)) s"
$P timeout 280 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.txt | head -20
for i in $(seq 1 60); do grep -q "1B made" $R/mk1b.txt && break; sleep 2; done; tail -1 $R/mk1b.txt
b() { local tag=$1; shift; local out; out=$(env "$@" $P timeout 90 $S bench -m $w/l1b.gguf -ngl 99 -p 512 -n 128 -r 2 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *(tg|pp)' | awk -F'|' '{print $(NF-2) $(NF-1)}' | tr '\n' ' ') | $(echo "$out" | grep -E 'rror|efus' | head -2 | tr '\n' ' ')"; }
{
b "1B Q4_K_M fast" X=1
b "1B Q4_K_M exact" STRIX_CUDA_EXACT=1
} 2>&1 | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run43.tgz -C $OUT r43 && rm -rf $R
