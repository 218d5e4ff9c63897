#!/usr/bin/env bash
# run 39: ncu (--cache-control none: caches as the step leaves them) of the 8B-shaped decode step,
# 2 layers (each kernel's own duration; the head and top_logits as the 32-layer model's).
set -u
export LD_LIBRARY_PATH=$PWD/.devcarry:${LD_LIBRARY_PATH:-}
export STRIX_LIBLLAMA_DIR=$PWD/.devcarry/ggml
S=build/strix; w=/tmp/w; mkdir -p $w; V=.devcarry/vocab-llama3.gguf
R=$OUT/r39; mkdir -p $R
t0=$SECONDS
$S synth --arch llama --layers 2 --embd 4096 --heads 32 --kv-heads 8 --head-dim 128 --ff 14336 --vocab $V --type f16 -o $w/l2-f16.gguf > $R/mk.txt 2>&1 && $S quantize $w/l2-f16.gguf $w/l2.gguf Q4_K_M 16 >> $R/mk.txt 2>&1; echo "made at $((SECONDS - t0)) s"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in "X=1" "STRIX_CUDA_ATTN_STAGE=0"; do
  env $v timeout 150 $NCU --clock-control none --cache-control none --csv --page raw --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__bytes_read.sum \
    $S bench -m $w/l2.gguf -ngl 99 -p 0 -n 48 -d 32 -r 1 > $R/ncu-$v.csv 2> $R/ncu-$v.err; echo "ncu $v rc=$? at $((SECONDS - t0)) s"
  python3 - "$R/ncu-$v.csv" <<'PY'
import csv, sys, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
r = list(csv.reader(rows))
h = r[0]; data = r[2:]
ki = h.index('Kernel Name'); ti = h.index('gpu__time_duration.sum'); gi = h.index('launch__grid_size')
ri = h.index('launch__registers_per_thread'); di = h.index('dram__bytes_read.sum')
scale = {'nsecond': 1e-3, 'usecond': 1.0, 'msecond': 1e3}.get(r[1][ti], 1e-3)
d = collections.defaultdict(list)
for x in data[-400:]:
    d[(x[ki][:70], x[gi])].append((float(x[ti].replace(',', '')), x[ri], x[di]))
for k, v in sorted(d.items(), key=lambda kv: -sum(t for t, _, _ in kv[1])):
    print('%-70s grid %6s n %3d mean %9.2f us regs %s dram %s' % (k[0], k[1], len(v), sum(t for t, _, _ in v) / len(v) * scale, v[0][1], v[-1][2]))
PY
done
echo "done at $((SECONDS - t0)) s"
tar czf $OUT/run39.tgz -C $OUT r39 && rm -rf $R
