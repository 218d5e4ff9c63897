#!/usr/bin/env bash
# run 44: scripts/gpu-check.sh --no-speed on the committed tree (exact numerics judged by the bar,
# the default kernels' quantized rows reported), after the 8-lane exact kernels were folded into
# one template (Q8_0 / Q6_K).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_STORIES=$PWD/.devcarry/stories260K.gguf STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
t0=$SECONDS
STRIX_BIN=build/strix STRIX_TEST_BIN=build/tests/test_backend_cuda STORIES=$STRIX_STORIES OUT=$OUT/r44 \
  timeout 420 bash scripts/gpu-check.sh --no-speed > /dev/null 2>&1
echo "gpu-check rc $? at $((SECONDS - t0)) s"
cat $OUT/r44/summary.txt
grep -E "FAILED  \]|PASSED  \]" $OUT/r44/log.txt | head -14
tar czf $OUT/run44.tgz -C $OUT r44 && rm -rf $OUT/r44
