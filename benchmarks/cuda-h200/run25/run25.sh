#!/usr/bin/env bash
# run 25: the MoE grouped expert GEMM (tests + pp512 A/B), qwen3moe decode at depth after the q/k-norm
# fix (a 12-layer cut of the 30B-A3B shape, Q4_K from strix synth), and the speed rows with nothing
# else running on the host: 1B / 8B Q4_K_M pp512 + tg128 (runs 23/24 made models meanwhile).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r25; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-300} ]; }
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|rror|refus" ; }
{ $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf
  $S synth --arch qwen3moe --layers 12 --embd 2048 --heads 32 --kv-heads 4 --head-dim 128 --ff 768 --experts 128 --experts-used 8 --vocab .devcarry/vocab-qwen3.gguf --type q4_K -o $w/q30c.gguf; } > $R/mk.txt 2>&1 &
MK=$!
timeout 120 $T --gtest_brief=1 --gtest_filter='CudaMoe*' > $R/tests.txt 2>&1; echo "moe tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|grouped vs|f16: (prefill|decode|mixed)" $R/tests.txt | cut -c1-160 | head -20
wait $MK; echo "models made at $((SECONDS - t0)) s"; grep -iE "rror" $R/mk.txt
b "1B" timeout 25 $S bench -m $w/l1b-q4_k_m.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
b "8B" timeout 30 $S bench -m $w/l8b-q4_k_m.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
b "q30c grouped" timeout 50 $S bench -m $w/q30c.gguf -ngl 99 -p 512 -n 128 -d 0,4096 -r 1 --out-json $R/bench-q30c.json | tee -a $R/speed.txt
ok 280 && b "q30c per-expert (STRIX_CUDA_MOE_GROUPED=0)" STRIX_CUDA_MOE_GROUPED=0 timeout 30 $S bench -m $w/q30c.gguf -ngl 99 -p 512 -n 0 -r 1 | tee -a $R/speed.txt
ok 300 && b "8B Q6_STAGE=0" STRIX_CUDA_Q6_STAGE=0 timeout 20 $S bench -m $w/l8b-q4_k_m.gguf -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt
ok 310 && b "1B Q6_STAGE=0" STRIX_CUDA_Q6_STAGE=0 timeout 15 $S bench -m $w/l1b-q4_k_m.gguf -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
tar czf $OUT/run25.tgz -C $OUT r25 && rm -rf $R
