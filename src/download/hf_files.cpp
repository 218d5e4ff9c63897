#include "download/hf_files.h"

#include <cctype>
#include <cstdio>

namespace strix::download {

namespace {

bool is_base_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_model_gguf(const std::string& path) {
  const std::string name = basename(path);
  return ends_with(name, ".gguf") && name.find("mmproj") == std::string::npos &&
         name.find("imatrix") == std::string::npos;
}

struct SplitName {
  std::string prefix;  // everything before "-NNNNN-of-MMMMM.gguf"
  int index = 0;
  int count = 0;
};

bool all_digits(const std::string& s, size_t from, size_t n) {
  for (size_t i = from; i < from + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

// "PREFIX-00001-of-00003.gguf" (five digits each, as gguf-split names parts).
bool parse_split_name(const std::string& path, SplitName* out) {
  static const std::string kTail = "-00000-of-00000.gguf";
  if (path.size() <= kTail.size()) return false;
  const size_t at = path.size() - kTail.size();
  if (path[at] != '-' || path.compare(at + 6, 4, "-of-") != 0 || path.compare(at + 15, 5, ".gguf") != 0) return false;
  if (!all_digits(path, at + 1, 5) || !all_digits(path, at + 10, 5)) return false;
  out->prefix = path.substr(0, at);
  out->index = std::stoi(path.substr(at + 1, 5));
  out->count = std::stoi(path.substr(at + 10, 5));
  return true;
}

bool is_later_split_part(const std::string& path) {
  SplitName s;
  return parse_split_name(path, &s) && s.index != 1;
}

}  // namespace

bool is_valid_repo_id(const std::string& repo) {
  if (repo.empty() || repo.size() > 256) return false;
  int slashes = 0;
  bool after_special = true;  // a special char may not start the id
  for (char c : repo) {
    if (is_base_char(c)) {
      after_special = false;
    } else if (c == '/' || c == '.' || c == '-') {
      if (after_special) return false;
      slashes += c == '/';
      after_special = true;
    } else {
      return false;
    }
  }
  return !after_special && slashes == 1;
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path.size() > 1024 || path.find('\\') != std::string::npos) return false;
  size_t start = 0;
  while (true) {
    const size_t slash = path.find('/', start);
    const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (char c : part) {
      if (static_cast<unsigned char>(c) < 0x20) return false;
    }
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

std::vector<std::string> split_set_files(const std::string& file) {
  SplitName s;
  if (!parse_split_name(file, &s) || s.count < 1) return {file};
  std::vector<std::string> parts;
  for (int i = 1; i <= s.count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d.gguf", i, s.count);
    parts.push_back(s.prefix + suffix);
  }
  return parts;
}

std::string pick_model_file(const std::vector<std::string>& files, const std::string& tag) {
  const bool latest = tag.empty() || tag == "latest";
  const std::vector<std::string> tags = latest ? std::vector<std::string>{"Q4_K_M", "Q8_0"} : std::vector{tag};
  for (const auto& t : tags) {
    const std::string want = upper(t);
    for (const auto& f : files) {
      if (!is_model_gguf(f) || is_later_split_part(f)) continue;
      const std::string u = upper(f);
      for (size_t at = u.find(want); at != std::string::npos; at = u.find(want, at + 1)) {
        const size_t after = at + want.size();
        if (after < u.size() && (u[after] == '.' || u[after] == '-')) return f;
      }
    }
  }
  if (latest) {
    for (const auto& f : files) {
      if (is_model_gguf(f) && !is_later_split_part(f)) return f;
    }
  }
  return {};
}

}  // namespace strix::download
