#!/usr/bin/env bash
# run 40: the decode attention over two blocks per KV head (STRIX_CUDA_ATTN_SUBS=1: one), with
# the staged cells (STRIX_CUDA_ATTN_STAGE=0: neither); ncu of the 2-layer 8B shape per kernel and
# the attention's stall reasons; every CUDA test; the 32-layer 8B tg128 A/B.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r40; mkdir -p $R
t0=$SECONDS
$S synth --arch llama --layers 2 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l2-f16.gguf > $R/mk2.txt 2>&1 && $S quantize $w/l2-f16.gguf $w/l2.gguf Q4_K_M 16 >> $R/mk2.txt 2>&1; echo "2-layer made at $((SECONDS - t0)) s"
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.txt | cut -c1-100 | head -14
STRIX_CUDA_ATTN_SUBS=1 timeout 100 $T --gtest_brief=1 --gtest_filter='*Attn*:*Attention*:*Decode*:*Engine*:CudaParity*' > $R/tests-subs1.txt 2>&1; echo "tests SUBS=1 rc $?"; grep -E "^\[  (PASSED|FAILED) " $R/tests-subs1.txt | head -2
timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | tee $R/greedy.txt
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in "X=1" "STRIX_CUDA_ATTN_SUBS=1" "STRIX_CUDA_ATTN_STAGE=0"; do
  env $v timeout 100 $NCU --clock-control none --cache-control none --csv --page raw -k regex:attn_decode --metrics gpu__time_duration.sum,launch__grid_size \
    $S bench -m $w/l2.gguf -ngl 99 -p 0 -n 48 -d 32 -r 1 2>/dev/null | grep '^"' | awk -F'","' -v v="$v" 'NR>2{gsub(/"/,"",$NF); s+=$(NF); n++; g=$(NF-1)} END{printf "ncu attn %s: n %d grid %s mean %.2f (ns or us)\n", v, n, g, s/n}'
done | tee $R/ncu-attn.txt
timeout 100 $NCU --clock-control none --cache-control none -k regex:attn_decode -c 3 --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
  $S bench -m $w/l2.gguf -ngl 99 -p 0 -n 8 -d 32 -r 1 > $R/ncu-attn-stalls.txt 2>&1; echo "stalls rc $?"
grep -E "Stall|Cycles|Warp Cycles|Issued|Eligible|Active Warps|Duration|Registers|Shared Memory" $R/ncu-attn-stalls.txt | head -60
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
tail -1 $R/mk.txt
b() { local tag=$1; shift; local out; out=$(env "$@" timeout 40 $S bench -m $w/l8b.gguf -ngl 99 $B 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *(tg|pp)' | awk -F'|' '{print $(NF-2) $(NF-1)}' | tr '\n' ' ') | $(echo "$out" | grep -E 'strix probe|rror|of the copy' | head -3 | tr '\n' ' ')"; }
{
B="-p 0 -n 128 -r 3"
for rep in 1 2; do
  b "new (defaults)" X=1
  b "subs 1" STRIX_CUDA_ATTN_SUBS=1
  b "no stage" STRIX_CUDA_ATTN_STAGE=0
done
b "gap" STRIX_CUDA_PROBE_GAP=1
b "gap skip attn" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=attn
B="-p 0 -n 128 -d 4096 -r 2"
b "d4096 new" X=1
} 2>&1 | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run40.tgz -C $OUT r40 && rm -rf $R
