#!/usr/bin/env bash
# Makes the models of benchmarks/RESULTS.md, reproducibly (fixed seeds; the
# quantized files come from the reference libllama's llama_model_quantize,
# i.e. what llama-quantize writes). Random weights: these measure speed only.
#
#   scripts/bench-models.sh [STRIX_BIN] [OUT_DIR]
#     STRIX_BIN  default build/strix
#     OUT_DIR    default /tmp/strix-bench-models (never inside the repo: *.gguf
#                is gitignored, but 1-3 GB files do not belong in a checkout)
#   MODELS="llama1b qwen3 olmoe" picks a subset (default: all).
#
# Files:
#   llama-1b-q4_k_m.gguf     Llama-3.2-1B shape: n_embd 2048, 16 layers, 32 heads, 8 kv
#                            heads, head_dim 64, ff 8192, llama3_1 vocab (128256), tied
#                            output; synth F16 -> Q4_K_M
#   qwen3-0.6b-q8_0.gguf     Qwen3-0.6B shape: 28 layers, n_embd 1024, 16 heads, 8 kv heads,
#                            head_dim 128, ff 3072, qwen3 vocab (151936), tied; F16 -> Q8_0
#   olmoe-2b-q4_k_m.gguf     OLMoE-1B-7B shape with 16 instead of 64 experts (so that it fits
#                            beside the others): 16 layers, n_embd 2048, 16 heads, 16 experts
#                            (8 used) of ff 1024, llama2 vocab (32000; OLMoE has 50304); F16 -> Q4_K_M
# stories260K (F32, a real model) is ../shared/data/stories260K.gguf.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/strix}"
out="${2:-/tmp/strix-bench-models}"
models="${MODELS:-llama1b qwen3 olmoe}"
threads="$(nproc)"
mkdir -p "$out"

make_one() {  # name synth-args... ; quantizes $out/$name-f16.gguf to $out/$name-$qtype.gguf
  local f16="$out/$1-f16.gguf" dst="$out/$1-$2.gguf" qtype="$3"
  shift 3
  if [ -f "$dst" ]; then echo "have $dst"; return; fi
  [ -f "$f16" ] || "$bin" synth --type f16 --seed 1 -o "$f16" "$@"
  "$bin" quantize "$f16" "$dst" "$qtype" "$threads"
  rm -f "$f16"
}

for m in $models; do
  case "$m" in
    llama1b)
      make_one llama-1b q4_k_m Q4_K_M --arch llama --vocab llama3_1 --tied-output \
        --layers 16 --embd 2048 --heads 32 --kv-heads 8 --head-dim 64 --ff 8192 --ctx 131072 ;;
    qwen3)
      make_one qwen3-0.6b q8_0 Q8_0 --arch qwen3 --vocab qwen3 --tied-output \
        --layers 28 --embd 1024 --heads 16 --kv-heads 8 --head-dim 128 --ff 3072 --ctx 40960 ;;
    olmoe)
      make_one olmoe-2b q4_k_m Q4_K_M --arch olmoe --vocab llama2 \
        --layers 16 --embd 2048 --heads 16 --kv-heads 16 --ff 1024 --experts 16 --experts-used 8 --ctx 4096 ;;
    *) echo "unknown model '$m' (llama1b qwen3 olmoe)" >&2; exit 1 ;;
  esac
done
ls -l "$out"
