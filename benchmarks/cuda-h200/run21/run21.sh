#!/usr/bin/env bash
# run 21: (1) the quantized parity gap: --trace per position of decode on 1- and 4-layer Q8_0 llamas;
# (2) gpu-check --no-speed + test_backend_cuda (the review commits of the last session);
# (3) PDL with launch_dependents (STRIX_CUDA_PDL=0/1/2) on the 8B and 1B tg128; the 8B's aggregate decode
#     of 16/64 sequences (batched-bench and bench-serve through the engine).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r21; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee $R/gpu.txt
( $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s" >> $R/mk.txt
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf >> $R/mk.txt 2>&1 && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 12 >> $R/mk.txt 2>&1 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s" >> $R/mk.txt ) &
MK=$!
# (1) per-position KL, decode
sm="--embd 256 --heads 8 --kv-heads 4 --ff 768 --vocab .devcarry/stories260K.gguf"
for L in 1 4; do
  $S synth --arch llama --layers $L $sm --type q8_0 --seed 1 -o $w/q8-L$L.gguf > /dev/null 2>&1
  $S synth --arch llama --layers $L $sm --type f16 --seed 1 -o $w/f16-L$L.gguf > /dev/null 2>&1
  for m in q8 f16; do
    echo "== $m L$L decode trace" >> $R/trace.txt
    timeout 60 $S parity -m $w/$m-L$L.gguf -ngl 99 --mode decode --tokens 24 --trace >> $R/trace.txt 2>&1
  done
done
echo "== q8 L1 decode trace, graphs off, plain gemv" >> $R/trace.txt
STRIX_CUDA_GRAPHS=0 STRIX_CUDA_GEMV_MODE=plain timeout 60 $S parity -m $w/q8-L1.gguf -ngl 99 --mode decode --tokens 24 --trace >> $R/trace.txt 2>&1
echo "== q8 L1 CPU (strix cpu vs libllama)" >> $R/trace.txt
timeout 60 $S parity -m $w/q8-L1.gguf --mode decode --tokens 24 --trace >> $R/trace.txt 2>&1
echo "trace done at $((SECONDS - t0)) s"
# (2)
timeout 200 $T --gtest_brief=1 > $R/tests.txt 2>&1; echo "tests rc $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | head -12
OUT=$R/check STRIX_BIN=$S STORIES=.devcarry/stories260K.gguf VOCAB3=$V timeout 200 bash scripts/gpu-check.sh --no-speed > $R/check.txt 2>&1
grep -E "^(ok|FAIL|----)" $R/check/summary.txt | sort | uniq -c | sort -rn | head -30
echo "checks done at $((SECONDS - t0)) s"
for i in $(seq 1 80); do grep -q "8B made" $R/mk.txt 2>/dev/null && break; sleep 4; done
grep -E "made|rror" $R/mk.txt
M8=$w/l8b-q4_k_m.gguf; M1=$w/l1b-q4_k_m.gguf
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|\| *(PP|TG|B) |^\| +[0-9]|bench-serve:|rror" ; }
for p in 0 2 1 0 2; do
  ok 470 && b "8B tg128 PDL=$p" STRIX_CUDA_PDL=$p timeout 40 $S bench -m $M8 -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt
done
ok 480 && b "8B batched-bench" timeout 70 $S batched-bench -m $M8 -ngl 99 -npp 128 -ntg 128 -npl 1,16,64 -r 1 --out-json $R/l8b-batched.json | tee -a $R/speed.txt
ok 500 && b "8B bench-serve" timeout 60 $S bench-serve -m $M8 -ngl 99 --no-compare -c 16,64 -p 128 -n 128 -r 1 --out-json $R/l8b-serve.json | tee -a $R/speed.txt
grep -q "1B made" $R/mk.txt && for p in 0 2 1; do ok 540 && b "1B tg128 PDL=$p" STRIX_CUDA_PDL=$p timeout 20 $S bench -m $M1 -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; done
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run21.tgz -C $OUT r21 && rm -rf $R
