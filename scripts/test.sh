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
# Every test's temporary files go under the build dir and are removed after the
# run, whatever a test left behind (models of up to 1.3 GB).
export TMPDIR="$PWD/$dir/test-tmp"
rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
trap 'rm -rf "$TMPDIR"' EXIT
skip=()
if [ "$dir" = build-asan ]; then
  # Exhaustive arithmetic sweeps against libggml (every shape x level x type, or
  # every token of a vocabulary): minutes each under the sanitizers, and nothing
  # in them allocates differently from the parity tests that do run here. They
  # run in the Release pass.
  skip=(-E '^(GrammarParity\.allowed_sets_match_libllama_on_bpe_vocab|CpuGgmlOrder\.(gemm_equals_libllama_per_output|avx2_level_matches_haswell)|CpuLegacyOrder\.gemm_equals_libllama_per_output|RegexListNegativeControl\.wrong_list_or_flag_is_detected)$')
fi
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" "${skip[@]}" "$@"
