#include "download/hf_cache.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "core/error.h"

namespace fs = std::filesystem;

namespace strix::download {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

fs::path hf_cache_dir() {
  if (auto v = env("HF_HUB_CACHE"); !v.empty()) return v;
  if (auto v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;
  if (auto v = env("HF_HOME"); !v.empty()) return fs::path(v) / "hub";
  if (auto v = env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
  if (auto v = env("HOME"); !v.empty()) return fs::path(v) / ".cache" / "huggingface" / "hub";
  throw Error("cannot place the Hugging Face cache: set HF_HUB_CACHE (or HF_HOME, or HOME)");
}

HfRepoCache::HfRepoCache(const fs::path& cache_dir, const std::string& repo) {
  // "org/name" -> "models--org--name" (huggingface_hub's repo_folder_name)
  std::string folder = "models--";
  for (char c : repo) folder += c == '/' ? std::string("--") : std::string(1, c);
  dir_ = cache_dir / folder;
}

std::string HfRepoCache::read_ref(const std::string& ref) const {
  std::ifstream in(dir_ / "refs" / ref);
  if (!in) return {};
  std::string commit;
  std::getline(in, commit);
  while (!commit.empty() && (commit.back() == '\n' || commit.back() == '\r' || commit.back() == ' ')) commit.pop_back();
  return commit;
}

void HfRepoCache::write_ref(const std::string& ref, const std::string& commit) const {
  if (read_ref(ref) == commit) return;
  fs::create_directories(dir_ / "refs");
  // Written whole then renamed, so a reader never sees half a commit id.
  const fs::path final_path = dir_ / "refs" / ref;
  const fs::path tmp = final_path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;  // huggingface_hub writes the id without a newline
    if (!out) throw Error("cannot write " + tmp.string());
  }
  fs::rename(tmp, final_path);
}

void HfRepoCache::link_snapshot(const std::string& commit, const std::string& file, const std::string& etag) const {
  const fs::path pointer = snapshot(commit, file);
  fs::create_directories(pointer.parent_path());
  std::error_code ec;
  fs::remove(pointer, ec);  // a dangling or stale link
  // Relative, as huggingface_hub makes it, so the cache folder can be moved.
  const fs::path target = blob(etag).lexically_relative(pointer.parent_path());
  fs::create_symlink(target, pointer, ec);
  if (ec) {
    // No symlinks (some filesystems): keep a copy, as huggingface_hub does in that case.
    fs::copy_file(blob(etag), pointer, fs::copy_options::overwrite_existing, ec);
    if (ec) throw Error("cannot place " + pointer.string() + " in the cache: " + ec.message());
  }
}

std::string HfRepoCache::cached_file(const std::string& file) const {
  const std::string commit = read_ref("main");
  if (commit.empty()) return {};
  const fs::path p = snapshot(commit, file);
  std::error_code ec;
  return fs::is_regular_file(p, ec) ? p.string() : std::string();  // follows the symlink
}

std::vector<std::string> HfRepoCache::cached_files() const {
  std::vector<std::string> out;
  const std::string commit = read_ref("main");
  if (commit.empty()) return out;
  const fs::path root = dir_ / "snapshots" / commit;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code ec2;
    if (fs::is_regular_file(it->path(), ec2)) out.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace strix::download
