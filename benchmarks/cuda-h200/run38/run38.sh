#!/usr/bin/env bash
# run 38: the decode attention's earlier cells staged in shared memory before the wait
# (STRIX_CUDA_ATTN_STAGE=0: the old L2 prefetch), the fused norm's own element loaded with its
# sum (STRIX_CUDA_NORM_OWN=0: after), the Q4_K high nibbles unshifted (STRIX_CUDA_PROBE_Q4K=2:
# the old shift); every CUDA test, stories260K greedy, GPU time per graph with the head / top skipped.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r38; mkdir -p $R
t0=$SECONDS
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.txt | cut -c1-120 | head -14
timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -3 | tee $R/greedy.txt
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
tail -1 $R/mk.txt
b() { local tag=$1; shift; local out; out=$(env "$@" timeout 40 $S bench -m $w/l8b.gguf -ngl 99 $B 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *(tg|pp)' | awk -F'|' '{print $(NF-2) $(NF-1)}' | tr '\n' ' ') | $(echo "$out" | grep -E 'strix probe|rror|of the copy' | head -3 | tr '\n' ' ')"; }
{
B="-p 0 -n 128 -r 3"
for rep in 1 2; do
  b "new (defaults)" X=1
  b "attn old" STRIX_CUDA_ATTN_STAGE=0
  b "norm old" STRIX_CUDA_NORM_OWN=0
  b "q4k old" STRIX_CUDA_PROBE_Q4K=2
  b "all three old" STRIX_CUDA_ATTN_STAGE=0 STRIX_CUDA_NORM_OWN=0 STRIX_CUDA_PROBE_Q4K=2
done
b "gap" STRIX_CUDA_PROBE_GAP=1
b "gap skip top" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=top
b "gap skip head" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=head
b "gap skip attn" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=attn
b "gap skip norm" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=norm
B="-p 0 -n 128 -d 4096 -r 2"
b "d4096 new" X=1
b "d4096 attn old" STRIX_CUDA_ATTN_STAGE=0
B="-p 512 -n 0 -r 3"
b "pp512 new" X=1
} 2>&1 | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run38.tgz -C $OUT r38 && rm -rf $R
