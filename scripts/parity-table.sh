#!/usr/bin/env bash
# Regenerates the parity evidence table of docs/MODELS.md: for each architecture
# and weight type, a synthetic model (strix synth, fixed seed) is compared with
# libllama by `strix parity` in three modes (one prefill batch, token-by-token
# decode, three sequences in ragged mixed batches), 256 positions each.
# Usage: scripts/parity-table.sh [BUILD_DIR] > table.md
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/strix"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
archs="llama qwen2 qwen3 qwen3moe gemma3 phi3 olmoe gpt-oss"
types="f32 f16 q8_0 q4_0 q4_K q5_K q6_K iq4_xs"
echo "| arch | weights | mode | positions | mean KL | max KL | limit | top-1 | libllama's own max KL | verdict |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for a in $archs; do
  ts="$types"
  [ "$a" = gpt-oss ] && ts="$types mxfp4"
  for t in $ts; do
    f="$dir/$a-$t.gguf"
    extra=()
    [ "$a" = gpt-oss ] || [ "$a" = gemma3 ] && extra=(--sliding-window 64)
    if [ "$t" = mxfp4 ]; then
      "$bin" synth --arch "$a" --type q8_0 --expert-type mxfp4 --seed 11 "${extra[@]}" -o "$f" >/dev/null
    elif [ "$a" = gpt-oss ]; then
      "$bin" synth --arch "$a" --type "$t" --expert-type "$t" --seed 11 "${extra[@]}" -o "$f" >/dev/null
    else
      "$bin" synth --arch "$a" --type "$t" --seed 11 "${extra[@]}" -o "$f" >/dev/null
    fi
    out=$("$bin" parity -m "$f" --tokens 256 --threads 2 2>&1 || true)
    echo "$out" | grep -E "^  (prefill|decode|mixed)" | while read -r line; do
      mode=$(echo "$line" | awk '{print $1}')
      pos=$(echo "$line" | awk '{print $2}')
      mean=$(echo "$line" | sed -E 's/.*mean KL ([^ ]+) .*/\1/')
      max=$(echo "$line" | sed -E 's/.*max KL ([^ ]+) \(limit ([^)]+)\).*/\1/')
      lim=$(echo "$line" | sed -E 's/.*max KL [^ ]+ \(limit ([^)]+)\).*/\1/')
      top=$(echo "$line" | sed -E 's/.*top-1 ([0-9]+\/[0-9]+).*/\1/')
      floor=$(echo "$line" | sed -E 's/.*prefill-vs-decode: mean [^ ]+ max ([^ ]+) .*/\1/')
      verdict=$(echo "$line" | awk '{print $NF}')
      echo "| $a | $t | $mode | $pos | $mean | $max | $lim | $top | $floor | $verdict |"
    done
    if ! echo "$out" | grep -qE "^  (prefill|decode|mixed)"; then
      echo "| $a | $t | - | - | - | - | - | - | - | $(echo "$out" | tail -1 | tr '|' '/') |"
    fi
  done
done
