#!/usr/bin/env bash
# run 30: the defaults chosen from run 29 (the GEMV's next step loaded before the products; Q6_K-only
# launches of 4,096+ rows at two rows per warp), A/B against run 29's defaults; the issue's rows
# (pp512, pp4096, tg128, tg128 @ d4096, 16 / 64 streams through the engine; 1B and 8B Q4_K_M, 8B Q8_0,
# a 12-layer cut of the Qwen3-30B-A3B shape); then gpu-check --no-speed (every parity check).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r30; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus" ; }
wait_for() { for i in $(seq 1 150); do grep -q "$1 made" $R/mk.txt 2>/dev/null && return 0; sleep 2; done; return 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type q8_0 -o $w/l8b-q8_0.gguf; echo "8B q8_0 made at $((SECONDS - t0)) s"
  $S synth --arch qwen3moe --layers 12 --embd 2048 --heads 32 --kv-heads 4 --head-dim 128 --ff 768 --experts 128 --experts-used 8 --vocab .devcarry/vocab-qwen3.gguf --type q4_K -o $w/q30c.gguf; echo "q30c made at $((SECONDS - t0)) s" ) > $R/mk.txt 2>&1 &
MK=$!
timeout 150 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | cut -c1-150 | head -16
timeout 40 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-120
M1=$w/l1b.gguf; M8=$w/l8b.gguf
tg() { b "$1" "${@:2}" timeout 20 $S bench -m $M -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; }
wait_for 1B
M=$M1
for rep in 1 2; do
  tg "1B defaults"
  tg "1B run-29 defaults (GEMV_PIPE=0 GEMV_Q6=split)" STRIX_CUDA_GEMV_PIPE=0 STRIX_CUDA_GEMV_Q6=split
done
b "1B pp512 pp4096 tg128" timeout 40 $S bench -m $M1 -ngl 99 -p 512,4096 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
b "1B tg128 @ d4096" timeout 25 $S bench -m $M1 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-1b-d4096.json | tee -a $R/speed.txt
b "1B engine" timeout 40 $S bench-serve -m $M1 -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l1b-serve.json | tee -a $R/speed.txt
wait_for 8B; grep -E "made|rror" $R/mk.txt
M=$M8
for rep in 1 2; do
  tg "8B defaults"
  tg "8B run-29 defaults (GEMV_PIPE=0 GEMV_Q6=split)" STRIX_CUDA_GEMV_PIPE=0 STRIX_CUDA_GEMV_Q6=split
done
b "8B pp512 pp4096 tg128" timeout 40 $S bench -m $M8 -ngl 99 -p 512,4096 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
b "8B tg128 @ d4096" timeout 30 $S bench -m $M8 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/bench-8b-d4096.json | tee -a $R/speed.txt
b "8B engine" timeout 80 $S bench-serve -m $M8 -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json | tee -a $R/speed.txt
echo "8B done at $((SECONDS - t0)) s"
wait_for "8B q8_0" && ok 330 && b "8B Q8_0" timeout 30 $S bench -m $w/l8b-q8_0.gguf -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b-q8_0.json | tee -a $R/speed.txt
wait_for q30c && ok 350 && b "30B-A3B 12-layer cut" timeout 40 $S bench -m $w/q30c.gguf -ngl 99 -p 512 -n 128 -d 0,4096 -r 2 --out-json $R/bench-q30c.json | tee -a $R/speed.txt
grep -E "made|rror" $R/mk.txt
echo "speed done at $((SECONDS - t0)) s"
rm -f $w/l8b-q8_0.gguf
ok 380 && OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=$T STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout $((570 - (SECONDS - t0))) bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "^(ok|FAIL|----)" $R/check/summary.txt 2>/dev/null | cut -c1-110
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run30.tgz -C $OUT r30 && rm -rf $R
