// Talks to one repo on a Hugging Face hub and keeps its files in the hub cache.
//
// A file is resolved as huggingface_hub resolves it: HEAD {endpoint}/{repo}/resolve/main/{file}
// (relative redirects followed, the CDN redirect not) gives the commit (X-Repo-Commit),
// the blob id (X-Linked-Etag, else ETag: the SHA-256 for LFS files) and the size
// (X-Linked-Size, else Content-Length); the bytes are then fetched from the redirect
// target into blobs/{id}.incomplete (resumed with Range), checked, and moved into place.
// When the network is unreachable, or offline mode is on, refs/main's snapshot is used.
#pragma once

#include <string>

#include "download/hf_cache.h"

namespace strix::download {

class HfHub {
 public:
  // endpoint: "https://huggingface.co" (no trailing '/'); token: "" for anonymous.
  HfHub(std::string endpoint, std::string repo, std::string token, bool offline);

  // The file a quant tag means, from the hub's manifest route
  // (GET {endpoint}/v2/{repo}/manifests/{tag} -> ggufFile.rfilename), or from the
  // cached files when offline or when the hub cannot be reached.
  std::string file_for_tag(const std::string& tag);

  // The local snapshot path of `file`, downloading it when the cache lacks it.
  std::string fetch(const std::string& file);

 private:
  std::vector<std::string> base_headers() const;
  std::string download_blob(const std::string& file, const std::string& url, const std::string& etag, uint64_t size);

  std::string endpoint_;
  std::string repo_;
  std::string token_;
  bool offline_;
  HfRepoCache cache_;
};

// "https://huggingface.co" unless $MODEL_ENDPOINT or $HF_ENDPOINT says otherwise (llama.cpp's order).
std::string hf_endpoint();

// $HF_HUB_OFFLINE set to 1 / true / yes / on.
bool hf_offline();

}  // namespace strix::download
