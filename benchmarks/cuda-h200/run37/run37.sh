#!/usr/bin/env bash
# run 37: where the 8B's decode step goes. Probes (measurement only, garbage outputs):
# STRIX_CUDA_PROBE_SKIP leaves kernels of one kind out of the decode graph, PROBE_GAP times
# the graph on the GPU, PROBE_EAGER copies the logits before the step's sync, PROBE_Q4K=1 drops
# the Q4_K activation sums (upper bound of precomputing them), =2 the unshifted high nibbles (exact).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r37; mkdir -p $R
t0=$SECONDS
grep -m1 "model name" /proc/cpuinfo; for f in amx_int8 avx512_fp16; do printf "%s:%s " $f "$(grep -c -m1 -w $f /proc/cpuinfo)"; done; echo
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
STRIX_CUDA_PROBE_Q4K=2 timeout 120 $T --gtest_brief=1 --gtest_filter='*Gemv*:*Fused*:*Engine*' > $R/tests-q4k2.txt 2>&1; echo "tests (PROBE_Q4K=2) rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) " $R/tests-q4k2.txt | cut -c1-150 | head -4
cuobjdump --dump-sass $S 2>/dev/null | awk '/Function : .*gemv_q_kernel.*ILi1ELi4ELi1ELb1E/{f=1;n=0;print;next} f&&/Function :/{f=0} f&&/\/\*[0-9a-f]{4}\*\//{n++; split($0,a," "); op=a[2]; if(op ~ /^@/) op=a[3]; sub(/\..*/,"",op); c[op]++} END{for(k in c) print c[k], k}' | sort -rn | head -40 > $R/sass-q4k.txt
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt && break; sleep 2; done
cat $R/mk.txt | tail -1
b() { local tag=$1; shift; local out; out=$(env "$@" timeout 25 $S bench -m $w/l8b.gguf -ngl 99 -p 0 -n 128 -r 3 2>&1); echo "$tag | $(echo "$out" | grep -E '\| *tg' | awk -F'|' '{print $(NF-1)}') | $(echo "$out" | grep -E 'strix probe|rror|of the copy' | head -3 | tr '\n' ' ')"; }
{
b default X=1
b gap STRIX_CUDA_PROBE_GAP=1
b eager STRIX_CUDA_PROBE_EAGER=1
b default X=1
for k in norm attn swiglu top qkv o gateup down head norm,attn,swiglu,top; do b "skip $k" STRIX_CUDA_PROBE_SKIP=$k; done
b "q4k nosum" STRIX_CUDA_PROBE_Q4K=1
b "q4k hi" STRIX_CUDA_PROBE_Q4K=2
b default X=1
b "q4k hi" STRIX_CUDA_PROBE_Q4K=2
b "gap+skip all but gemv" STRIX_CUDA_PROBE_GAP=1 STRIX_CUDA_PROBE_SKIP=norm,attn,swiglu,top
} 2>&1 | tee $R/speed.txt
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run37.tgz -C $OUT r37 && rm -rf $R
