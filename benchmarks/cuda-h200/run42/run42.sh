#!/usr/bin/env bash
# run 42: the staged cells and two blocks per KV head for one-token decode only (batches keep
# the old layout); the 1B's tg128 A/B of this session's changes; the 8B engine and tg128.
# Model making pinned to cores 0-9, the benches to 12-15 (the host side of a decode step).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r42; mkdir -p $R
t0=$SECONDS
P="taskset -c 12-15"
( taskset -c 0-11 $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && taskset -c 0-11 $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 12 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk8.txt 2>&1 &
$P $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk.txt 2>&1 && $P $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 4 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
$P timeout 60 $T --gtest_brief=1 --gtest_filter='*Attention*:*Paged*:*Engine*:*Fused*:CudaParity*' > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"; grep -E "^\[  (PASSED|FAILED) " $R/tests.txt | head -3
$P timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | tee $R/greedy.txt
b() { local tag=$1; shift; local out; out=$(env "$@" $P timeout 40 $S bench -m $M -ngl 99 $B 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *(tg|pp)' | awk -F'|' '{print $(NF-2) $(NF-1)}' | tr '\n' ' ') | $(echo "$out" | grep -E 'rror|of the copy' | head -3 | tr '\n' ' ')"; }
M=$w/l1b.gguf; B="-p 0 -n 128 -r 3"
{
b "1B defaults" X=1
b "1B no stage" STRIX_CUDA_ATTN_STAGE=0
b "1B norm old" STRIX_CUDA_NORM_OWN=0
b "1B defaults" X=1
} 2>&1 | tee $R/speed.txt
for i in $(seq 1 150); do grep -q "8B made" $R/mk8.txt && break; sleep 2; done
tail -1 $R/mk8.txt
M=$w/l8b.gguf
{
echo "== 8B engine"; $P timeout 100 $S bench-serve -m $w/l8b.gguf -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json 2>&1 | grep -E "bench-serve:|rror"
b "8B defaults" X=1
b "8B no top_logits" STRIX_CUDA_TOP_LOGITS=0
echo "== 8B greedy 96 tokens: device top_logits against the whole row read on the host"
for e in X=1 STRIX_CUDA_TOP_LOGITS=0 STRIX_CUDA_GRAPHS=0; do env $e $P timeout 60 $S -m $w/l8b.gguf -ngl 99 -no-cnv -p "Once upon a time" -n 96 --temp 0 --ignore-eos > $R/greedy8-$e.txt 2>/dev/null; echo "$e $(md5sum < $R/greedy8-$e.txt) $(wc -c < $R/greedy8-$e.txt) bytes"; done
} 2>&1 | tee -a $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run42.tgz -C $OUT r42 && rm -rf $R
