#!/usr/bin/env bash
# Installs what is missing, builds, and runs strix with the given arguments.
# With no arguments it completes "Once upon a time" greedily with the tiny real
# stories260K, as `llama-cli -hf ggml-org/models -hff tinyllamas/stories260K.gguf`
# would: downloaded into the Hugging Face cache when the hub answers (a quick probe
# first), else taken from that cache or ../shared/data; with none of these, a demo
# model made by `strix synth` (random weights, and it says so).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh >&2
./scripts/build.sh build >&2
bin=build/strix
if [ $# -gt 0 ]; then exec "$bin" "$@"; fi

repo=ggml-org/models
file=tinyllamas/stories260K.gguf
endpoint=${HF_ENDPOINT:-https://huggingface.co}
model=
# `strix download` prints the local path; it works whatever flags `strix -m` grows.
if curl -sS -o /dev/null --connect-timeout 3 --max-time 5 -I "$endpoint" 2>/dev/null; then
  model=$("$bin" download -hf "$repo" -hff "$file") || model=
fi
if [ -z "$model" ]; then
  model=$(HF_HUB_OFFLINE=1 "$bin" download -hf "$repo" -hff "$file" 2>/dev/null) || model=
fi
if [ -z "$model" ] && [ -f ../shared/data/stories260K.gguf ]; then
  model=../shared/data/stories260K.gguf
fi
if [ -z "$model" ]; then
  model=build/demo-llama.gguf
  echo "run.sh: no network and stories260K is not cached; using a demo model with RANDOM weights ($model)" >&2
  [ -f "$model" ] || "$bin" synth --arch llama --type f32 --seed 1 -o "$model" >&2
fi
exec "$bin" -m "$model" -no-cnv -p "Once upon a time" -n 64 --temp 0
