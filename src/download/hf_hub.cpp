#include "download/hf_hub.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "download/hf_files.h"
#include "download/http.h"
#include "download/progress.h"
#include "download/sha256.h"

namespace fs = std::filesystem;

namespace strix::download {

namespace {

// The hub answers the manifest route with "ggufFile" only for llama.cpp's agent.
constexpr const char* kUserAgent = "User-Agent: llama-cpp/strix";
constexpr int kAttempts = 3;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// Percent-encodes a repo path for a URL, keeping '/' (as huggingface_hub's quote()).
std::string url_path(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// huggingface_hub's _normalize_etag: drop a weak-validator prefix and the quotes.
std::string normalize_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

// Commit ids and ETags become file names: accept only what cannot escape a folder.
bool is_safe_name(const std::string& s) {
  if (s.empty() || s.size() > 128 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

uint64_t parse_size(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) return 0;
  return std::stoull(s);
}

std::string human_size(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// One sentence for an HTTP error answer about `what` ("repo/file" or "repo:tag").
[[noreturn]] void throw_http_error(const HttpResponse& res, const std::string& what, const std::string& origin,
                                   bool have_token) {
  const long status = res.status;
  const std::string& body = res.body;
  // The hub answers 401 "RepoNotFound" both for a missing repo and a private one.
  if (status == 401 && res.header("x-error-code") == "RepoNotFound") {
    throw Error("no such repo or file: " + what + " (401 from " + origin + ": the repo does not exist, or it is " +
                (have_token ? "private and the token does not open it: check HF_TOKEN / --hf-token)"
                            : "private or gated: set HF_TOKEN or pass --hf-token)"));
  }
  if (status == 401 && !have_token) {
    throw Error(what + " needs a Hugging Face token (401 from " + origin +
                ": the repo is private or gated, or does not exist): set HF_TOKEN or pass --hf-token");
  }
  if (status == 401) {
    throw Error("the Hugging Face token was refused for " + what + " (401 from " + origin +
                "): check HF_TOKEN / --hf-token");
  }
  if (status == 403) {
    throw Error("access to " + what + " is forbidden (403 from " + origin +
                "): for a gated model, accept its terms on the hub and use a token of that account (HF_TOKEN or "
                "--hf-token)");
  }
  if (status == 404) throw Error("no such repo or file: " + what + " (404 from " + origin + ")");
  std::string detail;
  try {
    const auto j = nlohmann::json::parse(body);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) detail = ": " + j["error"].get<std::string>();
  } catch (const std::exception&) {
  }
  throw Error("the hub answered HTTP " + std::to_string(status) + " for " + what + " (" + origin + ")" + detail);
}

}  // namespace

std::string hf_endpoint() {
  std::string e = env("MODEL_ENDPOINT");
  if (e.empty()) e = env("HF_ENDPOINT");
  if (e.empty()) e = "https://huggingface.co";
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

bool hf_offline() {
  std::string v = env("HF_HUB_OFFLINE");
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

HfHub::HfHub(std::string endpoint, std::string repo, std::string token, bool offline)
    : endpoint_(std::move(endpoint)),
      repo_(std::move(repo)),
      token_(std::move(token)),
      offline_(offline),
      cache_(hf_cache_dir(), repo_) {}

std::vector<std::string> HfHub::base_headers() const {
  std::vector<std::string> h{kUserAgent};
  if (!token_.empty()) h.push_back("Authorization: Bearer " + token_);
  return h;
}

std::string HfHub::file_for_tag(const std::string& tag) {
  const std::string what = repo_ + ":" + tag;
  std::string unreachable;
  if (!offline_) {
    HttpRequest req;
    req.url = endpoint_ + "/v2/" + repo_ + "/manifests/" + url_path(tag);
    req.headers = base_headers();
    req.headers.push_back("Accept: application/json");
    const HttpResponse res = http_fetch(req);
    if (res.network_error.empty() && res.status == 200) {
      std::string file;
      try {
        const auto j = nlohmann::json::parse(res.body);
        if (j.contains("ggufFile") && j["ggufFile"].contains("rfilename")) file = j["ggufFile"]["rfilename"];
      } catch (const std::exception& e) {
        throw Error("the hub's manifest for " + what + " is not valid JSON (" + e.what() + ")");
      }
      if (file.empty()) throw Error("the hub's manifest for " + what + " names no GGUF file (is it a GGUF repo?)");
      if (!is_safe_repo_path(file)) throw Error("the hub's manifest for " + what + " names an unsafe path: " + file);
      return file;  // mmprojFile, if any, is not used: Strix runs text models only
    }
    if (res.network_error.empty() && res.status < 500) {
      throw_http_error(res, what, url_origin(endpoint_), !token_.empty());
    }
    unreachable = res.network_error.empty() ? "HTTP " + std::to_string(res.status) : res.network_error;
  }
  // Offline, or the hub is unreachable or failing (5xx): the tag's file among what is cached.
  const std::string file = pick_model_file(cache_.cached_files(), tag);
  if (!file.empty()) return file;
  if (offline_) {
    throw Error("offline (HF_HUB_OFFLINE) and no file for " + what + " is in the cache " + cache_.dir().string());
  }
  throw Error("cannot reach " + url_origin(endpoint_) + " (" + unreachable + ") and no file for " + what +
              " is in the cache " + cache_.dir().string());
}

std::string HfHub::fetch(const std::string& file) {
  const std::string what = repo_ + "/" + file;
  if (offline_) {
    std::string p = cache_.cached_file(file);
    if (!p.empty()) return p;
    throw Error("offline (HF_HUB_OFFLINE) and " + what + " is not in the cache " + cache_.dir().string());
  }

  // HEAD for the metadata. Relative redirects (a renamed repo) are followed here;
  // the absolute one to the CDN is kept for the GET.
  std::string url = endpoint_ + "/" + repo_ + "/resolve/main/" + url_path(file);
  HttpResponse head;
  for (int hop = 0;; ++hop) {
    HttpRequest req;
    req.url = url;
    req.head = true;
    req.headers = base_headers();
    req.headers.push_back("Accept-Encoding: identity");
    head = http_fetch(req);
    const std::string loc = head.header("location");
    if (head.network_error.empty() && head.status >= 300 && head.status < 400 && !loc.empty() && loc[0] == '/' &&
        hop < 5) {
      url = url_origin(url) + loc;
      continue;
    }
    break;
  }
  // An unreachable hub, or one failing on its side (5xx), does not stop a cached model.
  const std::string down = !head.network_error.empty() ? head.network_error
                           : head.status >= 500        ? "HTTP " + std::to_string(head.status)
                                                       : std::string();
  if (!down.empty()) {
    std::string p = cache_.cached_file(file);
    if (!p.empty()) {
      std::fprintf(stderr, "cannot reach %s (%s); using the cached %s\n", url_origin(endpoint_).c_str(), down.c_str(),
                   what.c_str());
      return p;
    }
    if (head.network_error.empty()) throw_http_error(head, what, url_origin(endpoint_), !token_.empty());
    throw Error("cannot reach " + url_origin(endpoint_) + " (" + down + ") and " + what + " is not in the cache " +
                cache_.dir().string());
  }
  if (head.status >= 400) throw_http_error(head, what, url_origin(endpoint_), !token_.empty());

  const std::string commit = head.header("x-repo-commit");
  std::string etag = head.header("x-linked-etag");
  if (etag.empty()) etag = head.header("etag");
  etag = normalize_etag(etag);
  std::string size_s = head.header("x-linked-size");
  if (size_s.empty()) size_s = head.header("content-length");
  const uint64_t size = parse_size(size_s);
  if (commit.empty() || etag.empty()) {
    throw Error("the answer from " + url_origin(endpoint_) + " for " + what +
                " lacks X-Repo-Commit or ETag (is HF_ENDPOINT a Hugging Face hub?)");
  }
  if (!is_safe_name(commit) || !is_safe_name(etag)) {
    throw Error("the hub gave a malformed commit or ETag for " + what + ": '" + commit + "', '" + etag + "'");
  }
  std::string location = url;
  if (head.status >= 300 && head.status < 400 && !head.header("location").empty()) location = head.header("location");

  cache_.write_ref("main", commit);
  const fs::path pointer = cache_.snapshot(commit, file);
  std::error_code ec;
  if (fs::is_regular_file(pointer, ec)) return pointer.string();
  if (!fs::is_regular_file(cache_.blob(etag), ec)) {
    // One writer per blob, across processes: the lock file huggingface_hub uses too
    // ({cache}/.locks/models--org--name/{etag}.lock, flock), so neither appends to
    // the other's .incomplete.
    const fs::path lock_path = cache_.dir().parent_path() / ".locks" / cache_.dir().filename() / (etag + ".lock");
    fs::create_directories(lock_path.parent_path());
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw Error("cannot create the lock file " + lock_path.string());
    std::unique_ptr<int, void (*)(int*)> unlock(new int(fd), [](int* p) {
      flock(*p, LOCK_UN);
      close(*p);
      delete p;
    });
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      std::fprintf(stderr, "waiting for another process downloading %s\n", what.c_str());
      flock(fd, LOCK_EX);
    }
    if (!fs::is_regular_file(cache_.blob(etag), ec)) download_blob(file, location, etag, size);
  }
  cache_.link_snapshot(commit, file, etag);
  return pointer.string();
}

std::string HfHub::download_blob(const std::string& file, const std::string& url, const std::string& etag,
                                 uint64_t size) {
  const std::string what = repo_ + "/" + file;
  const fs::path blob = cache_.blob(etag);
  const fs::path part = blob.string() + ".incomplete";
  fs::create_directories(blob.parent_path());
  const std::string name = file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1);

  std::string last_error;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    if (attempt > 0) {
      // Short back-off, then resume from what the cut transfer left.
      std::this_thread::sleep_for(std::chrono::milliseconds(500 << (attempt - 1)));
      std::fprintf(stderr, "%s: %s; resuming\n", name.c_str(), last_error.c_str());
    }
    std::error_code ec;
    uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    if (ec || (size > 0 && have > size)) have = 0;  // unreadable or longer than the file: start over

    Sha256 hash;
    if (have > 0) {
      // The hash covers the whole file: feed it the bytes already there.
      std::unique_ptr<FILE, int (*)(FILE*)> in(std::fopen(part.c_str(), "rb"), std::fclose);
      std::vector<char> buf(1 << 20);
      uint64_t left = have;
      while (in && left > 0) {
        const size_t n = std::fread(buf.data(), 1, std::min<uint64_t>(left, buf.size()), in.get());
        if (n == 0) break;
        hash.update(buf.data(), n);
        left -= n;
      }
      if (left != 0) {
        have = 0;
        hash = Sha256();
      }
    }
    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(part.c_str(), have > 0 ? "r+b" : "wb"), std::fclose);
    if (!out) throw Error("cannot write " + part.string());
    if (have > 0 && std::fseek(out.get(), static_cast<long>(have), SEEK_SET) != 0) {
      throw Error("cannot seek in " + part.string());
    }

    uint64_t got = have;
    if (size == 0 || have < size) {
      Progress progress(name, size, have);
      bool write_failed = false;
      bool first = true;
      HttpRequest req;
      req.url = url;
      req.headers = {kUserAgent};
      // The token is for the hub: never hand it to the CDN (libcurl drops it on redirects too).
      if (!token_.empty() && url_origin(url) == url_origin(endpoint_)) {
        req.headers.push_back("Authorization: Bearer " + token_);
      }
      req.follow_redirects = true;
      req.range_from = have;
      const HttpResponse res = http_fetch(req, [&](long status, const char* data, size_t n) {
        if (first) {
          first = false;
          if (have > 0 && status == 200) {
            // The server ignored the Range: it sends the whole file, so start the part over.
            if (std::fseek(out.get(), 0, SEEK_SET) != 0 || ftruncate(fileno(out.get()), 0) != 0) {
              write_failed = true;
              return false;
            }
            hash = Sha256();
            got = 0;
          }
        }
        if (std::fwrite(data, 1, n, out.get()) != n) {
          write_failed = true;
          return false;
        }
        hash.update(data, n);
        got += n;
        progress.advance(n);
        return true;
      });
      const bool flushed = std::fflush(out.get()) == 0;
      progress.finish(res.network_error.empty() && res.status < 300);
      if (write_failed || !flushed) throw Error("cannot write " + part.string() + " (disk full?)");
      if (res.status == 416) {  // the part does not fit the file any more: start over
        out.reset();
        fs::remove(part, ec);
        last_error = "the server refused the resume offset";
        continue;
      }
      if (res.status >= 400) throw_http_error(res, what, url_origin(url), !token_.empty());
      if (!res.network_error.empty()) {
        last_error = "transfer cut at " + human_size(got) + " (" + res.network_error + ")";
        continue;
      }
    }
    out.reset();
    if (size > 0 && got < size) {
      last_error = "transfer ended at " + human_size(got) + " of " + human_size(size);
      continue;
    }
    if (size > 0 && got > size) {
      fs::remove(part, ec);
      throw Error("the download of " + what + " is longer than the hub said (" + std::to_string(got) + " > " +
                  std::to_string(size) + " bytes); the file was not kept");
    }
    if (is_sha256_hex(etag)) {
      const std::string actual = hash.hex_digest();
      std::string expected = etag;
      for (char& c : expected) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (actual != expected) {
        fs::remove(part, ec);
        throw Error("the download of " + what + " does not match its SHA-256 (expected " + expected + ", got " +
                    actual + "); the file was not kept");
      }
    }
    fs::rename(part, blob);
    return blob.string();
  }
  throw Error("the download of " + what + " failed after " + std::to_string(kAttempts) + " attempts (" + last_error +
              "); run again to resume it");
}

}  // namespace strix::download
