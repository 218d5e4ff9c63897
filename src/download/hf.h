// Models from the Hugging Face hub: `-hf user/repo[:QUANT]`, `-hff FILE`, `--hf-token`.
//
// Resolution follows llama.cpp: `-hf user/repo:TAG` asks the hub's manifest route
// (GET {endpoint}/v2/{repo}/manifests/{tag}, tag "latest" by default) which GGUF file
// the tag means; `-hff FILE` names the file directly. Split sets
// (name-00001-of-0000N.gguf) download every part; multimodal projectors (mmproj) are
// ignored. Files land in the standard Hugging Face hub cache ($HF_HUB_CACHE, else
// $HF_HOME/hub, else ~/.cache/huggingface/hub), laid out as huggingface_hub lays it
// out, so files another tool downloaded are reused and ours are reused by it.
// Environment: HF_ENDPOINT (another host), HF_TOKEN (when no --hf-token is given),
// HF_HUB_OFFLINE=1 (never touch the network; cached files only).
#pragma once

#include <string>

namespace strix::download {

struct HfRequest {
  std::string repo;   // "user/repo"
  std::string tag;    // "Q4_K_M"; empty means "latest" (only used when file is empty)
  std::string file;   // path inside the repo ("-hff"); empty means ask the manifest
  std::string token;  // bearer token; empty: $HF_TOKEN if set, else anonymous
};

// "user/repo:Q4_K_M" (+ -hff FILE, + --hf-token T) -> request. Throws strix::Error on a
// malformed repo id (not exactly one '/', empty parts, spaces).
HfRequest parse_hf_arg(const std::string& hf, const std::string& hff, const std::string& token);

// The local path of the model's first file (the first part of a split set),
// downloading whatever is missing into the hub cache. Throws strix::Error with one
// sentence: no such repo or file (404), a token hint (401/403), a hash mismatch, the
// network being down, or offline mode with nothing cached.
std::string resolve_model(const HfRequest& req);

}  // namespace strix::download
