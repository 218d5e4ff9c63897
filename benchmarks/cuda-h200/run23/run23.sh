#!/usr/bin/env bash
# run 23: Q6_K GEMV staged through shared memory (A/B: STRIX_CUDA_Q6_STAGE=0/1) on the 1B and 8B tg128;
# the kernel tests; the rows not measured yet: 8B Q8_0, Qwen3-30B-A3B-shaped Q4_K_M MoE.
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; T=build/tests/test_backend_cuda; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r23; mkdir -p $R
t0=$SECONDS
ok() { [ $((SECONDS - t0)) -lt ${1:-540} ]; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt; nproc; df -h /tmp | tail -1
( set -x
  $S synth --arch llama --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --tied-output --vocab $V --type f16 -o $w/l1b-f16.gguf && $S quantize $w/l1b-f16.gguf $w/l1b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l1b-f16.gguf; echo "1B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l8b-f16.gguf && $S quantize $w/l8b-f16.gguf $w/l8b-q4_k_m.gguf Q4_K_M 16 && rm -f $w/l8b-f16.gguf; echo "8B made at $((SECONDS - t0)) s"
  $S synth --arch llama --layers 32 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type q8_0 -o $w/l8b-q8_0.gguf; echo "8B q8_0 made at $((SECONDS - t0)) s"
  $S synth --arch qwen3moe --layers 48 --embd 2048 --heads 32 --kv-heads 4 --head-dim 128 --ff 768 --experts 128 --experts-used 8 --vocab .devcarry/vocab-qwen3.gguf --type q8_0 -o $w/q30-q8_0.gguf && $S quantize --allow-requantize $w/q30-q8_0.gguf $w/q30-q4_k_m.gguf Q4_K_M 16 && rm -f $w/q30-q8_0.gguf; echo "30B made at $((SECONDS - t0)) s"
) > $R/mk.txt 2>&1 &
MK=$!
timeout 150 $T --gtest_brief=1 --gtest_filter='CudaKernels.*:CudaFused.*:CudaMoe.*:CudaTop*' > $R/tests.txt 2>&1; echo "kernel tests rc $? at $((SECONDS - t0)) s"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" $R/tests.txt | head -12
timeout 60 $S parity -m .devcarry/stories260K.gguf -ngl 99 --greedy 200 2>&1 | tail -1 | cut -c1-150
b() { local tag=$1; shift; echo "== $tag"; env "$@" 2>&1 | grep -E "\| *(pp|tg)[0-9]|bench-serve:|rror|refus" ; }
wait_for() { for i in $(seq 1 150); do grep -q "$1 made" $R/mk.txt 2>/dev/null && return 0; sleep 2; done; return 1; }
M1=$w/l1b-q4_k_m.gguf; M8=$w/l8b-q4_k_m.gguf; M8q=$w/l8b-q8_0.gguf; M30=$w/q30-q4_k_m.gguf
wait_for 1B && for q in 1 0 1 0; do ok 200 && b "1B tg128 Q6_STAGE=$q" STRIX_CUDA_Q6_STAGE=$q timeout 20 $S bench -m $M1 -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; done
wait_for 8B && for q in 1 0 1 0; do ok 330 && b "8B tg128 Q6_STAGE=$q" STRIX_CUDA_Q6_STAGE=$q timeout 30 $S bench -m $M8 -ngl 99 -p 0 -n 128 -r 3 | tee -a $R/speed.txt; done
ok 360 && b "8B pp512 tg128" timeout 40 $S bench -m $M8 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b.json | tee -a $R/speed.txt
ok 380 && b "1B pp512 tg128" timeout 30 $S bench -m $M1 -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-1b.json | tee -a $R/speed.txt
wait_for "8B q8_0" && ok 420 && b "8B Q8_0 pp512 tg128" timeout 40 $S bench -m $M8q -ngl 99 -p 512 -n 128 -r 3 --out-json $R/bench-8b-q8_0.json | tee -a $R/speed.txt
rm -f $M8q
wait_for 30B; grep -E "made|rror|Killed" $R/mk.txt; ls -la $w; df -h /tmp | tail -1
ok 500 && b "30B-A3B pp512 tg128" timeout 60 $S bench -m $M30 -ngl 99 -p 512 -n 128 -r 2 --out-json $R/bench-30b.json | tee -a $R/speed.txt
ok 530 && b "30B-A3B tg128 @ d4096" timeout 40 $S bench -m $M30 -ngl 99 -p 0 -n 128 -d 4096 -r 1 --out-json $R/bench-30b-d4096.json | tee -a $R/speed.txt
echo "all done at $((SECONDS - t0)) s"
kill $MK 2>/dev/null
tar czf $OUT/run23.tgz -C $OUT r23 && rm -rf $R
