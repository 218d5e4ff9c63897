#!/usr/bin/env python3
"""A small stand-in for the Hugging Face hub, for Strix's download tests (no internet).

Serves what `-hf` needs, with the hub's headers:
  GET  /v2/{repo}/manifests/{tag}      {"ggufFile": {"rfilename": ...}} (only to a llama-cpp agent)
  HEAD /{repo}/resolve/{rev}/{path}    LFS: 302 to the "CDN" with X-Repo-Commit, X-Linked-Etag
                                       (the sha256), X-Linked-Size; plain git files: 200 + ETag
  GET  /{repo}/resolve/{rev}/{path}    the same redirect, or the plain file's bytes
  GET  /cdn/{sha256}                   the bytes, with Range support; served from 127.0.0.1
                                       while the hub is "localhost", so it is another host
Faults: unknown repo -> 401 RepoNotFound, unknown file -> 404 EntryNotFound, org/private
needs "Bearer hf_secret", org/badhash serves bytes that do not match their sha256,
org/old-name redirects relatively to org/models (a renamed repo), evil/repo's manifest
names "../../escape.gguf".
Test hooks: GET /_control?cut_next=N makes the next N CDN answers stop half way (connection
closed), GET /_control?down=1 makes /resolve/ answer 503; GET /_log lists the requests seen (JSON); GET /_log/clear forgets them.

Usage: fake_hub.py FILES_DIR [REPO:PATH=LOCAL_FILE]...  -> prints the port, then serves;
FILES_DIR receives every served file under {repo}/{path} so a test can compare bytes.
"""
import hashlib
import json
import os
import random
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

COMMITS = {
    "org/models": "0123456789abcdef0123456789abcdef01234567",
    "org/private": "89abcdef0123456789abcdef0123456789abcdef",
    "org/badhash": "fedcba9876543210fedcba9876543210fedcba98",
    "evil/repo": "00000000000000000000000000000000000000aa",
}


def blob_bytes(seed, n):
    rnd = random.Random(seed)
    return rnd.randbytes(n)


def make_repos():
    models = {
        "tinyllamas/stories.gguf": blob_bytes(1, 300_000),
        "model-Q4_K_M.gguf": blob_bytes(2, 40_000),
        "model-Q8_0.gguf": blob_bytes(3, 50_000),
        "mmproj-model-f16.gguf": blob_bytes(4, 10_000),
        "split/big-00001-of-00003.gguf": blob_bytes(5, 30_000),
        "split/big-00002-of-00003.gguf": blob_bytes(6, 30_000),
        "split/big-00003-of-00003.gguf": blob_bytes(7, 20_000),
        "README.md": b"# models\nA plain git file (not LFS).\n",
    }
    return {
        "org/models": models,
        "org/private": {"secret-Q4_K_M.gguf": blob_bytes(8, 20_000)},
        "org/badhash": {"bad.gguf": blob_bytes(9, 20_000)},
        "evil/repo": {"x.gguf": blob_bytes(10, 1000)},
    }


MANIFEST_TAGS = {
    "org/models": {"latest": "model-Q4_K_M.gguf", "q4_k_m": "model-Q4_K_M.gguf", "q8_0": "model-Q8_0.gguf",
                   "split": "split/big-00001-of-00003.gguf"},
    "org/private": {"latest": "secret-Q4_K_M.gguf"},
    "evil/repo": {"latest": "../../escape.gguf"},
}


def is_lfs(path):
    return path.endswith(".gguf")


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class State:
    def __init__(self, repos):
        self.repos = repos
        self.lock = threading.Lock()
        self.log = []
        self.cut_next = 0
        self.down = False
        self.by_sha = {}
        for repo, files in repos.items():
            for path, data in files.items():
                sha = hashlib.sha256(data).hexdigest()
                served = data
                if repo == "org/badhash":
                    served = bytes([data[0] ^ 1]) + data[1:]  # one flipped bit
                self.by_sha[sha] = served


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, *args):  # quiet
        pass

    def record(self):
        with self.state.lock:
            self.state.log.append({
                "method": self.command, "path": self.path, "host": self.headers.get("Host", ""),
                "range": self.headers.get("Range", ""), "auth": self.headers.get("Authorization", ""),
                "ua": self.headers.get("User-Agent", ""),
            })

    def send(self, status, body=b"", headers=None, head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def error(self, status, code, message, head=False):
        body = json.dumps({"error": message}).encode()
        self.send(status, body, {"Content-Type": "application/json", "X-Error-Code": code,
                                 "X-Error-Message": message}, head)

    def authorized(self, repo):
        if repo != "org/private":
            return None
        auth = self.headers.get("Authorization", "")
        if auth == "Bearer hf_secret":
            return None
        return "Invalid credentials in Authorization header" if auth else "Access to this repo requires a token"

    def do_HEAD(self):
        self.handle_get(head=True)

    def do_GET(self):
        self.handle_get(head=False)

    def handle_get(self, head):
        url = urlparse(self.path)
        path = unquote(url.path)
        if path == "/_log":
            with self.state.lock:
                body = json.dumps(self.state.log).encode()
            return self.send(200, body, {"Content-Type": "application/json"}, head)
        if path == "/_log/clear":
            with self.state.lock:
                self.state.log = []
            return self.send(200, b"{}", {}, head)
        if path == "/_control":  # ?cut_next=N&down=0|1
            q = parse_qs(url.query)
            with self.state.lock:
                self.state.cut_next = int(q.get("cut_next", ["0"])[0])
                self.state.down = q.get("down", ["0"])[0] == "1"
            return self.send(200, b"{}", {}, head)
        self.record()
        parts = path.lstrip("/").split("/")
        if parts[0] == "cdn" and len(parts) == 2:
            return self.serve_cdn(parts[1], head)
        if parts[0] == "v2" and len(parts) >= 5 and parts[3] == "manifests":
            return self.serve_manifest(parts[1] + "/" + parts[2], "/".join(parts[4:]), head)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo = parts[0] + "/" + parts[1]
            rev = parts[3]
            file = "/".join(parts[4:])
            if repo == "org/old-name":  # a renamed repo: relative redirect, as the hub does
                return self.send(307, b"", {"Location": "/org/models/resolve/%s/%s" % (rev, file)}, head)
            return self.serve_resolve(repo, rev, file, head)
        self.send(404, b"not found", {}, head)

    def serve_manifest(self, repo, tag, head):
        if repo not in self.state.repos:
            return self.error(401, "RepoNotFound", "Repository not found", head)
        denied = self.authorized(repo)
        if denied:
            return self.error(401, "RepoNotFound", denied, head)
        file = MANIFEST_TAGS.get(repo, {}).get(tag.lower())
        if file is None:
            return self.error(400, "InvalidTag", "The specified tag is not available in the repository. "
                              "Please use another tag or \"latest\"", head)
        manifest = {"config": {"digest": "sha256:" + "0" * 64}, "layers": []}
        if "llama-cpp" in self.headers.get("User-Agent", ""):
            data = self.state.repos[repo].get(file, b"")
            manifest["ggufFile"] = {"rfilename": file, "blobId": "sha256:" + hashlib.sha256(data).hexdigest(),
                                    "size": len(data)}
            if repo == "org/models":
                manifest["mmprojFile"] = {"rfilename": "mmproj-model-f16.gguf"}
        self.send(200, json.dumps(manifest).encode(), {"Content-Type": "application/json"}, head)

    def serve_resolve(self, repo, rev, file, head):
        if self.state.down:
            return self.send(503, b"Service Unavailable", {}, head)
        if repo not in self.state.repos:
            return self.error(401, "RepoNotFound", "Repository not found", head)
        denied = self.authorized(repo)
        if denied:
            return self.error(401, "RepoNotFound", denied, head)
        commit = COMMITS[repo]
        if rev not in ("main", commit):
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
        files = self.state.repos[repo]
        if file not in files:
            return self.error(404, "EntryNotFound", "Entry not found", head)
        data = files[file]
        if is_lfs(file):
            sha = hashlib.sha256(data).hexdigest()
            port = self.server.server_address[1]
            location = "http://127.0.0.1:%d/cdn/%s" % (port, sha)
            body = b"Found. Redirecting to " + location.encode()
            return self.send(302, body, {
                "Location": location, "X-Repo-Commit": commit, "X-Linked-Etag": '"%s"' % sha,
                "X-Linked-Size": str(len(data)), "ETag": 'W/"%s"' % git_blob_sha1(b"pointer " + sha.encode()),
                "Accept-Ranges": "bytes"}, head)
        self.send(200, data, {"X-Repo-Commit": commit, "ETag": '"%s"' % git_blob_sha1(data),
                              "Accept-Ranges": "bytes", "Content-Type": "text/plain"}, head)

    def serve_cdn(self, sha, head):
        data = self.state.by_sha.get(sha)
        if data is None:
            return self.send(404, b"NoSuchKey", {}, head)
        start = 0
        rng = self.headers.get("Range", "")
        status = 200
        headers = {"Accept-Ranges": "bytes", "ETag": '"%s"' % sha, "Content-Type": "application/octet-stream"}
        if rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[len("bytes="):-1])
            if start >= len(data):
                headers["Content-Range"] = "bytes */%d" % len(data)
                return self.send(416, b"", headers, head)
            status = 206
            headers["Content-Range"] = "bytes %d-%d/%d" % (start, len(data) - 1, len(data))
        body = data[start:]
        if head:
            return self.send(status, body, headers, head=True)
        with self.state.lock:
            cut = self.state.cut_next > 0
            if cut:
                self.state.cut_next -= 1
        if not cut:
            return self.send(status, body, headers)
        # Announce the whole body, send half, then drop the connection.
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)


def main():
    files_dir = sys.argv[1]
    repos = make_repos()
    for extra in sys.argv[2:]:  # REPO:PATH=LOCAL_FILE serves a real file too (manual runs)
        where, local = extra.split("=", 1)
        repo, path = where.split(":", 1)
        with open(local, "rb") as f:
            repos.setdefault(repo, {})[path] = f.read()
        COMMITS.setdefault(repo, hashlib.sha1(repo.encode()).hexdigest())
    for repo, files in repos.items():
        for path, data in files.items():
            out = os.path.join(files_dir, repo, path)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(data)
    Handler.state = State(repos)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
