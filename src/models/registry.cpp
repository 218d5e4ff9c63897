// The architecture registry: the one place that maps general.architecture to
// the file that runs it.
#include <string>
#include <utility>
#include <vector>

#include "models/archs.h"

namespace strix {

namespace {

const std::vector<std::pair<std::string, ArchLoadFn>>& registry() {
  static const std::vector<std::pair<std::string, ArchLoadFn>> archs = {
      {"llama", load_llama},     {"gemma3", load_gemma3}, {"qwen3moe", load_qwen3moe}, {"olmoe", load_olmoe},
      {"gpt-oss", load_gpt_oss}, {"qwen2", load_qwen2},   {"qwen3", load_qwen3},       {"phi3", load_phi3},
  };
  return archs;
}

}  // namespace

ArchLoadFn find_arch_loader(const std::string& arch) {
  for (const auto& [name, fn] : registry()) {
    if (name == arch) return fn;
  }
  return nullptr;
}

std::vector<std::string> Model::supported_archs() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : registry()) names.push_back(name);
  return names;
}

}  // namespace strix
