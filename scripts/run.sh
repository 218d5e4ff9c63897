#!/usr/bin/env bash
# Installs what is missing, builds, and runs strix with the given arguments.
# With no arguments it completes "Once upon a time" greedily with the default
# model: the tiny real stories260K (../shared/data/stories260K.gguf when present;
# downloading it with -hf arrives with the CLI issue), else a demo model made by
# `strix synth` (random weights, and it says so).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh >&2
./scripts/build.sh build >&2
bin=build/strix
if [ $# -gt 0 ]; then exec "$bin" "$@"; fi
model=../shared/data/stories260K.gguf
if [ ! -f "$model" ]; then
  model=build/demo-llama.gguf
  echo "run.sh: stories260K not found; using a demo model with RANDOM weights ($model)" >&2
  [ -f "$model" ] || "$bin" synth --arch llama --type f32 --seed 1 -o "$model" >&2
fi
exec "$bin" -m "$model" -p "Once upon a time" -n 64 --temp 0
