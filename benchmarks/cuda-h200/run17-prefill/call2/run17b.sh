#!/usr/bin/env bash
# run 17, call 2: the final code (flash prefill attention, activations_f16 with SwiGLU fused for the
# down projection, merged q/k/v and gate/up GEMMs, the 16-byte Q4_K/Q6_K dequant). Tests and gpu-check
# while the models are made, then the speed rows, A/B (STRIX_CUDA_DEQUANT=plain, STRIX_CUDA_FA=0) and
# the per-step profile (first forward left out). Optional steps are skipped past 540 s.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
S=build-cuda/strix; T=build-cuda/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r17b; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee $R/gpu.txt
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 14 >> $R/mk.txt 2>&1 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" >> $R/mk.txt
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf >> $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 14 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
MK=$!
STRIX_STORIES=.devcarry/stories260K.gguf timeout 200 $T --gtest_filter='CudaFlash*:CudaKernels.Dequant*' > $R/tests-new.txt 2>&1; echo "new tests rc $?"
grep -E "heads .*reference|OK|FAILED|Failure|expected|Which is" $R/tests-new.txt | head -30
OUT=$R/check STRIX_BIN=$S STRIX_TEST_BIN=$T STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 240 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
cat $R/check/summary.txt; grep -E "^\[  (PASSED|FAILED) " $R/check/log.txt | head -12
echo "checks done at $((SECONDS - t0)) s"
for i in $(seq 1 70); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 5; done
grep -E "made|rror" $R/mk.txt
M8=$w/l8b-q4_k_m.gguf; M1=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|\| *(PP|TG|B) |^\| +[0-9]|rror|strix cuda profile|^  [a-z]" ; }
ok && b "8B pp512 default" timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 --out-json $R/l8b-pp512.json | tee -a $R/ab.txt
ok && b "8B pp512 DEQUANT=plain" STRIX_CUDA_DEQUANT=plain timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/ab.txt
ok && b "8B pp512 profile default" STRIX_CUDA_PROFILE=1 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/profile.txt
ok && b "8B pp4096 default" timeout 90 $S bench -m $M8 -ngl 99 -p 4096 -n 0 -r 2 --out-json $R/l8b-pp4096.json | tee -a $R/ab.txt
ok && b "8B pp4096 profile default" STRIX_CUDA_PROFILE=1 timeout 60 $S bench -m $M8 -ngl 99 -p 4096 -n 0 -r 1 | tee -a $R/profile.txt
ok && b "8B tg128 default" timeout 60 $S bench -m $M8 -ngl 99 -p 0 -n 128 -r 2 | tee -a $R/ab.txt
ok && b "8B pp512 FA=0" STRIX_CUDA_FA=0 timeout 60 $S bench -m $M8 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/ab.txt
ok 480 && b "8B batched-bench" timeout 60 $S batched-bench -m $M8 -ngl 99 -npp 128 -ntg 32 -npl 1,16,64 -r 1 --out-json $R/l8b-batched.json | tee -a $R/ab.txt
echo "8B done at $((SECONDS - t0)) s"
for i in $(seq 1 30); do grep -q "1B made" $R/mk.txt && break; ok 520 || break; sleep 5; done
if grep -q "1B made" $R/mk.txt; then
  ok && b "1B pp512 tg128 default" timeout 40 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/l1b.json | tee -a $R/ab.txt
  ok 550 && b "1B pp512 profile" STRIX_CUDA_PROFILE=1 timeout 30 $S bench -m $M1 -ngl 99 -p 512 -n 0 -r 3 | tee -a $R/profile.txt
fi
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run17b.tgz -C $OUT r17b && rm -rf $R
