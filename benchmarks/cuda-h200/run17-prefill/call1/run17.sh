#!/usr/bin/env bash
# run 17: the tensor-core prefill attention (attention_prefill), activations_f16 and the merged
# q/k/v and gate/up prefill GEMMs. Models made in the background while test_backend_cuda and
# gpu-check --no-speed run; then pp512 / pp4096 A/B (STRIX_CUDA_FA=0, STRIX_CUDA_MERGE=0) and the
# per-step profile (STRIX_CUDA_PROFILE=1). Optional steps are skipped past 530 s.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build-cuda/strix; T=build-cuda/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r17; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-530} ]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/gpu.txt
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 14 >> $R/mk.txt 2>&1 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" >> $R/mk.txt
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf >> $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 14 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
MK=$!
STRIX_STORIES=.devcarry/stories260K.gguf timeout 200 $T --gtest_filter='CudaFlash*' > $R/tests-flash.txt 2>&1; echo "flash tests rc $?"
grep -E "heads|OK|FAILED|Failure|expected|Which is" $R/tests-flash.txt | head -40
echo "flash tests done at $((SECONDS - t0)) s"
OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=$T STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 240 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
cat $R/check/summary.txt; grep -E "^\[  (PASSED|FAILED) |tests? ran" $R/check/log.txt | head -12
echo "checks done at $((SECONDS - t0)) s"
for i in $(seq 1 60); do [ -f $w/l8b-q4_k_m.gguf ] && grep -q "8B made" $R/mk.txt && break; sleep 5; done
cat $R/mk.txt | grep -E "made|rror"
M8=$w/l8b-q4_k_m.gguf; M1=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|rror|strix cuda profile|^  [a-z]" ; }
ok && b "8B pp512 default" timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 --out-json $R/l8b-pp512.json | tee -a $R/ab.txt
ok && b "8B pp512 FA=0" STRIX_CUDA_FA=0 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/ab.txt
ok && b "8B pp512 MERGE=0" STRIX_CUDA_MERGE=0 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/ab.txt
ok && b "8B pp512 profile default" STRIX_CUDA_PROFILE=1 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 2 | tee -a $R/profile.txt
ok && b "8B pp512 profile FA=0" STRIX_CUDA_PROFILE=1 STRIX_CUDA_FA=0 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 2 | tee -a $R/profile.txt
ok && b "8B pp4096 default" timeout 90 $S bench -m $M8 -ngl 99 -p 4096 -n 0 -r 2 --out-json $R/l8b-pp4096.json | tee -a $R/ab.txt
ok && b "8B pp4096 profile default" STRIX_CUDA_PROFILE=1 timeout 60 $S bench -m $M8 -ngl 99 -p 4096 -n 0 -r 1 | tee -a $R/profile.txt
ok && b "8B tg128 default" timeout 60 $S bench -m $M8 -ngl 99 -p 0 -n 128 -r 2 | tee -a $R/ab.txt
ok 470 && b "8B pp4096 FA=0" STRIX_CUDA_FA=0 timeout 60 $S bench -m $M8 -ngl 99 -p 4096 -n 0 -r 2 | tee -a $R/ab.txt
echo "8B done at $((SECONDS - t0)) s"
for i in $(seq 1 30); do grep -q "1B made" $R/mk.txt && break; ok 500 || break; sleep 5; done
if [ -f $M1 ] && grep -q "1B made" $R/mk.txt; then
  ok && b "1B pp512 default" timeout 40 $S bench -m $M1 -ngl 99 -p 512 -n 0 -r 3 --out-json $R/l1b-pp512.json | tee -a $R/ab.txt
  ok && b "1B pp512 FA=0" STRIX_CUDA_FA=0 timeout 40 $S bench -m $M1 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/ab.txt
  ok 545 && b "1B pp512 profile" STRIX_CUDA_PROFILE=1 timeout 30 $S bench -m $M1 -ngl 99 -p 512 -n 0 -r 2 | tee -a $R/profile.txt
fi
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run17.tgz -C $OUT r17 && rm -rf $R
