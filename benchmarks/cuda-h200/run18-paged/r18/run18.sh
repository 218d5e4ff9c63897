#!/usr/bin/env bash
# run 18: the paged CUDA KV cache (block tables in every kernel), seq_cut on the GPU and the server's
# engine on the GPU. New tests (CudaPaged, CudaEngine) first, then gpu-check --no-speed (all kernel and
# parity tests, stories260K greedy, the server check) while the models are made, then the speed rows
# (decode must not lose to run 16/17) and batched decode. Optional steps are skipped past 470 s.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r18; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-470} ]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee $R/gpu.txt
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" >> $R/mk.txt
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf >> $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
MK=$!
timeout 150 $T --gtest_filter='CudaPaged.*:CudaEngine.*' > $R/tests-new.txt 2>&1; echo "new tests rc $?"
grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which is|actual" $R/tests-new.txt | head -40
OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=$T STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 260 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
cat $R/check/summary.txt; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/check/log.txt | head -12
echo "checks done at $((SECONDS - t0)) s"
for i in $(seq 1 60); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 5; done
grep -E "made|rror" $R/mk.txt
M8=$w/l8b-q4_k_m.gguf; M1=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|\| *(PP|TG|B) |^\| +[0-9]|rror" ; }
ok && b "8B pp512 tg128" timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/l8b.json | tee -a $R/speed.txt
ok && b "8B batched-bench" timeout 70 $S batched-bench -m $M8 -ngl 99 -npp 128 -ntg 128 -npl 1,16,64 -r 1 --out-json $R/l8b-batched.json | tee -a $R/speed.txt
for i in $(seq 1 20); do grep -q "1B made" $R/mk.txt && break; ok 480 || break; sleep 5; done
grep -q "1B made" $R/mk.txt && ok 490 && b "1B pp512 tg128" timeout 40 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/l1b.json | tee -a $R/speed.txt
ok 500 && b "8B tg128 @ d4096" timeout 60 $S bench -m $M8 -ngl 99 -p 0 -n 128 -d 4096 -r 2 --out-json $R/l8b-d4096.json | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run18.tgz -C $OUT r18 && rm -rf $R
