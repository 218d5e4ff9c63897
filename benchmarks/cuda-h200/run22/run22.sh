#!/usr/bin/env bash
# run 22: device greedy (top_logits + Sampler::pick_greedy) and the merged CUDA MoE: every kernel test,
# then the engine under load (bench-serve -ngl 99, greedy) on the 1B and the 8B, batched-bench with the
# logits on the host (as llama_decode leaves them), the 8B's 64-sequence step profile, tg128.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r22; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
( $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf >> $R/mk.txt 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
MK=$!
timeout 230 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | head -14
timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -2 | cut -c1-150
M8=$w/l8b-q4_k_m.gguf; M1=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|\| *(PP|TG|B) |^\| +[0-9]|bench-serve:|rror|profile|^  [a-z]" ; }
for i in $(seq 1 60); do grep -q "1B made" $R/mk.txt 2>/dev/null && break; sleep 3; done
ok && b "1B bench-serve" timeout 60 $S bench-serve -m $M1 -ngl 99 --no-compare -c 1,16,64 -p 128 -n 128 -r 1 --out-json $R/l1b-serve.json | tee -a $R/speed.txt
echo "1B done at $((SECONDS - t0)) s"
for i in $(seq 1 100); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 3; done
grep -E "made|rror" $R/mk.txt
ok 500 && b "8B bench-serve" timeout 60 $S bench-serve -m $M8 -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json | tee -a $R/speed.txt
ok 520 && b "8B batched-bench" timeout 50 $S batched-bench -m $M8 -ngl 99 -npp 128 -ntg 128 -npl 16,64 -r 1 --out-json $R/l8b-batched.json | tee -a $R/speed.txt
ok 540 && b "8B 64-seq profile" STRIX_CUDA_PROFILE=1 timeout 40 $S batched-bench -m $M8 -ngl 99 -npp 16 -ntg 128 -npl 64 -r 1 | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run22.tgz -C $OUT r22 && rm -rf $R
