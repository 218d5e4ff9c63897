#!/usr/bin/env python3
"""Checks a Hugging Face hub cache folder against the layout huggingface_hub writes
(file_download.py: repo_folder_name, _create_symlink, refs written without newline):

  models--{org}--{name}/refs/{ref}            a 40-hex commit id, no newline
  models--{org}--{name}/blobs/{etag}          sha256 of the bytes (LFS) or git blob sha1
  models--{org}--{name}/snapshots/{commit}/p  symlink == os.path.relpath(blobs/{etag}, dirname(p))

Usage: hf_layout_check.py CACHE [REPO PATH EXPECTED_FILE]...
Prints "ok" and exits 0, or prints each problem and exits 1.
"""
import hashlib
import os
import re
import sys

HEX40 = re.compile(r"^[0-9a-f]{40}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def check(cache, expected):
    problems = []
    for repo_dir in sorted(os.listdir(cache)):
        if repo_dir.startswith("."):
            continue
        if not repo_dir.startswith("models--"):
            problems.append("unexpected entry in cache: " + repo_dir)
            continue
        root = os.path.join(cache, repo_dir)
        for entry in os.listdir(root):
            if entry not in ("blobs", "snapshots", "refs", ".no_exist"):
                problems.append("%s: unexpected entry %s" % (repo_dir, entry))
        blobs = os.path.join(root, "blobs")
        for blob in sorted(os.listdir(blobs)) if os.path.isdir(blobs) else []:
            path = os.path.join(blobs, blob)
            data = open(path, "rb").read()
            if HEX64.match(blob):
                if hashlib.sha256(data).hexdigest() != blob:
                    problems.append("%s: blob %s does not hash to its name" % (repo_dir, blob))
            elif HEX40.match(blob):
                if hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() != blob:
                    problems.append("%s: git blob %s does not hash to its name" % (repo_dir, blob))
            else:
                problems.append("%s: unexpected blob name %s" % (repo_dir, blob))
        refs = os.path.join(root, "refs")
        for ref in os.listdir(refs) if os.path.isdir(refs) else []:
            commit = open(os.path.join(refs, ref), "rb").read().decode()
            if not HEX40.match(commit):
                problems.append("%s: refs/%s holds %r, not a bare commit id" % (repo_dir, ref, commit))
            elif not os.path.isdir(os.path.join(root, "snapshots", commit)):
                problems.append("%s: refs/%s names a commit without a snapshot" % (repo_dir, ref))
        snaps = os.path.join(root, "snapshots")
        for dirpath, _, files in os.walk(snaps):
            for f in files:
                p = os.path.join(dirpath, f)
                if not os.path.islink(p):
                    problems.append("%s: %s is not a symlink" % (repo_dir, p))
                    continue
                target = os.readlink(p)
                if os.path.isabs(target):
                    problems.append("%s: %s links to an absolute path" % (repo_dir, p))
                    continue
                blob = os.path.join(blobs, os.path.basename(target))
                if target != os.path.relpath(blob, os.path.dirname(p)):
                    problems.append("%s: %s -> %s, expected %s" % (repo_dir, p, target,
                                                                  os.path.relpath(blob, os.path.dirname(p))))
                if not os.path.isfile(p):
                    problems.append("%s: %s dangles" % (repo_dir, p))
    for repo, path, source in expected:
        root = os.path.join(cache, "models--" + repo.replace("/", "--"))
        try:
            commit = open(os.path.join(root, "refs", "main")).read()
            got = open(os.path.join(root, "snapshots", commit, path), "rb").read()
        except OSError as e:
            problems.append("%s/%s: %s" % (repo, path, e))
            continue
        if got != open(source, "rb").read():
            problems.append("%s/%s: bytes differ from %s" % (repo, path, source))
    return problems


def main():
    args = sys.argv[1:]
    expected = [tuple(args[i:i + 3]) for i in range(1, len(args), 3)]
    problems = check(args[0], expected)
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
