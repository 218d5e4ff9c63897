#!/usr/bin/env bash
# Configures and builds Strix. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
#   default BUILD_DIR is build/ (Release). Set STRIX_SANITIZE=1 for an ASan+UBSan build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build}"; shift || true
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Paths under the checkout are hashed relative to it, so a fresh clone anywhere
# (CI) reuses the objects of an earlier build.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
if [ "${STRIX_SANITIZE:-0}" = 1 ]; then args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRIX_SANITIZE=ON -DSTRIX_BENCH=OFF); fi
if [ ! -f "$dir/build.ninja" ]; then cmake -S . -B "$dir" "${args[@]}" "$@"; fi
cmake --build "$dir" -j"$(nproc)"
