#!/usr/bin/env bash
# Server benchmark receipt (strix bench-serve): aggregate decode t/s at 1, 4,
# 16 and 64 concurrent streams and the shared-prefix time to first token,
# Strix's engine next to libllama on the same load. Run on a quiet machine.
#   scripts/bench-server.sh MODEL.gguf [OUT.json] [extra bench-serve flags...]
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
model="${1:?usage: scripts/bench-server.sh MODEL.gguf [OUT.json] [flags...]}"
out="${2:-$here/benchmarks/serve-$(basename "${model%.gguf}")-t$(nproc).json}"
shift $(( $# >= 2 ? 2 : 1 ))
strix="${STRIX:-$here/build/strix}"
exec "$strix" bench-serve -m "$model" -t "$(nproc)" -c 1,4,16,64 -r 3 --out-json "$out" "$@"
