#!/usr/bin/env bash
# The server's engine on the GPU (issues 6, 7), for scripts/gpu-check.sh:
# strix serve -ngl 99 -np 4 on stories260K answers four concurrent greedy
# /completion requests, each with strix run -ngl 99's text for its prompt
# (control: none with another prompt's text).
# Usage: scripts/gpu-serve-check.sh STRIX_BIN MODEL OUT_DIR [NGL]   (exit 0: all equal)
#   NGL: -ngl of both the server and strix run (default 99; a smaller count: partial offload)
set -uo pipefail
S="$1"; M="$2"; OUT="$3"; NGL="${4:-99}"
port=18093
"$S" serve -m "$M" -ngl "$NGL" -np 4 --port $port >"$OUT/serve.log" 2>&1 &
sp=$!
trap 'kill $sp 2>/dev/null; wait $sp 2>/dev/null' EXIT
for _ in $(seq 300); do grep -q "listening on" "$OUT/serve.log" && break; sleep 0.1; done
grep -q "on the GPU" "$OUT/serve.log" || { echo "the server does not run on the GPU:"; cat "$OUT/serve.log"; exit 1; }
prompts=("Once upon a time" "The little dog" "Lily and Tom went to the park" "One day, the sun")
for i in "${!prompts[@]}"; do
  "$S" run -m "$M" -ngl "$NGL" -p "${prompts[$i]}" -n 48 --temp 0 --ignore-eos -no-cnv --no-display-prompt \
    >"$OUT/cli-$i.txt" 2>/dev/null || { echo "strix run failed for prompt $i"; exit 1; }
done
python3 - "$port" "$OUT" "${prompts[@]}" <<'PY'
import concurrent.futures, json, sys, urllib.request
port, out, prompts = sys.argv[1], sys.argv[2], sys.argv[3:]
def ask(p):
    body = json.dumps({"prompt": p, "n_predict": 48, "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body, {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    replies = list(ex.map(ask, prompts))
bad = 0
clis = [open(f"{out}/cli-{i}.txt").read().rstrip() for i in range(len(prompts))]
# negative control of the comparison: no reply equals another prompt's text
if any(r["content"].rstrip() == clis[(i + 1) % len(clis)] for i, r in enumerate(replies)):
    print("control FAILED: a reply equals another prompt's text")
    bad += 1
for i, r in enumerate(replies):
    want = clis[i]
    got = r["content"].rstrip()
    ok = got == want and r["tokens_predicted"] == 48
    bad += not ok
    print(("same " if ok else "DIFF ") + repr(got)[:120] + ("" if ok else "\n  cli: " + repr(want)[:120]))
sys.exit(1 if bad else 0)
PY
