// The Hugging Face hub cache, laid out as the Python huggingface_hub lays it out so
// that files are shared with it (and with llama.cpp, which uses the same cache):
//
//   {cache}/models--{org}--{repo}/
//     refs/main                          the commit "main" pointed to (no newline)
//     blobs/{etag}                       file bytes, named by the hub's ETag
//                                        (the SHA-256 for LFS files, the git blob id else)
//     blobs/{etag}.incomplete            a download in progress (resumed with Range)
//     snapshots/{commit}/{path}          relative symlink -> ../../blobs/{etag}
//
// {cache} is $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's order).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace strix::download {

std::filesystem::path hf_cache_dir();

class HfRepoCache {
 public:
  HfRepoCache(const std::filesystem::path& cache_dir, const std::string& repo);

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path blob(const std::string& etag) const { return dir_ / "blobs" / etag; }
  std::filesystem::path snapshot(const std::string& commit, const std::string& file) const {
    return dir_ / "snapshots" / commit / file;
  }

  // The commit refs/{ref} names, or "" when the ref was never written.
  std::string read_ref(const std::string& ref) const;
  void write_ref(const std::string& ref, const std::string& commit) const;

  // snapshots/{commit}/{file} -> the blob, as a relative symlink (the blob must exist).
  void link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const;

  // The snapshot path of `file` under refs/main's commit when it exists (resolving to a
  // file), else "". This is what offline use and a network failure fall back on.
  std::string cached_file(const std::string& file) const;

  // Every file in refs/main's snapshot (paths relative to it, '/'-separated).
  std::vector<std::string> cached_files() const;

 private:
  std::filesystem::path dir_;
};

}  // namespace strix::download
