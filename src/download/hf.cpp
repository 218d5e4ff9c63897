#include "download/hf.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "download/hf_cache.h"
#include "download/hf_files.h"
#include "download/hf_hub.h"

namespace strix::download {

HfRequest parse_hf_arg(const std::string& hf, const std::string& hff, const std::string& token) {
  if (hf.empty()) throw Error("-hf needs a repo: user/repo[:QUANT]");
  HfRequest req;
  const size_t colon = hf.find(':');
  req.repo = hf.substr(0, colon);
  if (colon != std::string::npos) {
    req.tag = hf.substr(colon + 1);
    const bool tag_ok = !req.tag.empty() && req.tag.size() <= 128 &&
                        req.tag.find_first_not_of(
                            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == std::string::npos;
    if (!tag_ok) throw Error("-hf " + hf + ": the quant tag after ':' must be letters, digits, '_', '.' or '-'");
  }
  if (!is_valid_repo_id(req.repo)) throw Error("-hf " + hf + ": expected user/repo[:QUANT], e.g. ggml-org/models");
  if (!hff.empty() && !is_safe_repo_path(hff)) {
    throw Error("-hff " + hff + ": expected a relative path inside the repo, e.g. tinyllamas/stories260K.gguf");
  }
  req.file = hff;
  req.token = token;
  if (req.token.empty()) {
    if (const char* t = std::getenv("HF_TOKEN")) req.token = t;
  }
  return req;
}

static std::string resolve_model_impl(const HfRequest& req);

std::string resolve_model(const HfRequest& req) {
  try {
    return resolve_model_impl(req);
  } catch (const std::filesystem::filesystem_error& e) {
    // Say which cache failed, in one sentence, rather than the bare OS error.
    throw Error("cannot use the Hugging Face cache " + hf_cache_dir().string() + ": " + e.code().message() + " (" +
                e.path1().string() + ")");
  }
}

static std::string resolve_model_impl(const HfRequest& req) {
  if (!is_valid_repo_id(req.repo)) throw Error("-hf " + req.repo + ": expected user/repo[:QUANT]");
  std::string token = req.token;
  if (token.empty()) {
    if (const char* t = std::getenv("HF_TOKEN")) token = t;
  }
  HfHub hub(hf_endpoint(), req.repo, token, hf_offline());
  std::string file = req.file;
  if (file.empty()) file = hub.file_for_tag(req.tag.empty() ? "latest" : req.tag);
  if (!is_safe_repo_path(file)) throw Error("-hff " + file + ": expected a relative path inside the repo");

  // A split set is useless without every part; the loader opens the first.
  const std::vector<std::string> parts = split_set_files(file);
  std::string first;
  for (const auto& part : parts) {
    std::string path = hub.fetch(part);
    if (first.empty()) first = path;
  }
  return first;
}

}  // namespace strix::download
