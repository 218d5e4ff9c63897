#!/usr/bin/env python3
"""Prints the summary table of benchmarks/RESULTS.md from the receipts
(benchmarks/*.json written by `strix bench --out-json`).

    scripts/bench-table.py [benchmarks/*.json]

A row is marked stale when its receipt was made from a tree with uncommitted
changes, or from a commit whose code differs from HEAD's (commits that only
touch benchmarks/ or docs/, such as the one adding the receipts, keep it fresh)."""
import glob
import json
import os
import subprocess
import sys


def head_commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def same_code(commit, head):
    if commit == head:
        return True
    r = subprocess.run(["git", "diff", "--quiet", commit, head, "--", ".", ":!benchmarks", ":!docs"],
                       capture_output=True)
    return r.returncode == 0


def mean_sd(d):
    return f"{d['avg_ts']:.2f} ± {d['stddev_ts']:.2f}"


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    paths = sys.argv[1:] or sorted(glob.glob("benchmarks/*.json"))
    head = head_commit()
    print("| model | test | threads | strix t/s | libllama t/s | ratio | receipt | made | status |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |")
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        if r.get("tool") != "strix bench":
            continue
        b = r["build"]
        stale = b["git_dirty"] or not same_code(b["git_commit"], head)
        status = "stale" if stale else "fresh"
        made = f"{r['time']} {b['git_commit'][:12]}{'+dirty' if b['git_dirty'] else ''}"
        for t in r["results"]:
            ref = mean_sd(t["libllama"]) if "libllama" in t else "-"
            ratio = f"{t['ratio']:.2f}" if "ratio" in t else "-"
            print(f"| {t['model_type']} | {t['test']} | {t['n_threads']} | {mean_sd(t['strix'])} | {ref} | {ratio} "
                  f"| {os.path.basename(path)} | {made} | {status} |")


if __name__ == "__main__":
    main()
