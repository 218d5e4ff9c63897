#!/usr/bin/env bash
# Installs what is missing, builds, and runs every CPU test.
#   scripts/test.sh            Release build in build/
#   scripts/test.sh --asan     ASan+UBSan build in build-asan/
# Extra arguments after the mode go to ctest (e.g. -R gguf).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
dir=build
if [ "${1:-}" = "--asan" ]; then
  shift
  dir=build-asan
  export STRIX_SANITIZE=1
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
fi
./scripts/build.sh "$dir"
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "$@"
