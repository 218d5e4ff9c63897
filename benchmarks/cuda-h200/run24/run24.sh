#!/usr/bin/env bash
# run 24: gpu-check --no-speed (the merged partial -ngl, CUDA MoE, device greedy, Q6_K staging, q/k norms
# before the fused decode attention, stories260K Q8_0/Q4_K_M rows), then clean speed rows (no model being
# made meanwhile): 1B / 8B Q4_K_M, 8B Q8_0, Qwen3-30B-A3B-shaped Q4_K_M (pp512, tg128, tg128 @ d4096, serve).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r24; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
( set -x
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s"
  $S synth --arch qwen3moe --layers 48 --embd 2048 --heads 32 --kv-heads 4 --head-dim 128 --ff 768 --experts 128 --experts-used 8 --vocab .devcarry/vocab-qwen3.gguf --type q8_0 -o $w/q30-q8_0.gguf && $S quantize --allow-requantize $w/q30-q8_0.gguf $w/q30-q4_k_m.gguf Q4_K_M 16 && rm -f $w/q30-q8_0.gguf; echo "30B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type q8_0 -o $w/l8b-q8_0.gguf; echo "8B q8_0 made at $((SECONDS - t0)) s"
) > $R/mk.txt 2>&1 &
MK=$!
OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=$T STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 300 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
echo "gpu-check rc $? at $((SECONDS - t0)) s"
grep -E "^(ok|FAIL|----)" $R/check/summary.txt | cut -c1-110
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/check/log.txt | cut -c1-120 | head -16
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus" ; }
wait_for() { for i in $(seq 1 150); do grep -q "$1 made" $R/mk.txt 2>/dev/null && return 0; sleep 2; done; return 1; }
M1=$w/l1b-q4_k_m.gguf; M8=$w/l8b-q4_k_m.gguf; M8q=$w/l8b-q8_0.gguf; M30=$w/q30-q4_k_m.gguf
wait_for "8B q8_0"; grep -E "made|rror|Killed" $R/mk.txt
ok 420 && b "1B" timeout 25 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
ok 430 && b "8B" timeout 30 $S bench -m $M8 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
ok 450 && b "8B Q8_0" timeout 35 $S bench -m $M8q -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b-q8_0.json | tee -a $R/speed.txt
ok 480 && b "30B-A3B" timeout 45 $S bench -m $M30 -ngl 99 -p 512 -n 128 -r 2 --out-json $R/bench-30b.json | tee -a $R/speed.txt
ok 510 && b "30B-A3B @ d4096" timeout 40 $S bench -m $M30 -ngl 99 -p 0 -n 128 -d 4096 -r 1 --out-json $R/bench-30b-d4096.json | tee -a $R/speed.txt
ok 530 && b "30B-A3B serve" timeout 50 $S bench-serve -m $M30 -ngl 99 --no-compare -c 16,64 -p 128 -n 64 -r 1 --out-json $R/serve-30b.json | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run24.tgz -C $OUT r24 && rm -rf $R
