// Naming rules for files in a hub repo, free of any network: which file a quant tag
// means among cached files, the parts of a split set, and which paths are safe to
// create under the cache.
#pragma once

#include <string>
#include <vector>

namespace strix::download {

// "org/name": letters, digits and '_' with single '.', '-' between them, one '/'
// (the hub's rule as llama.cpp checks it; it also keeps ".." out of cache paths).
bool is_valid_repo_id(const std::string& repo);

// A relative '/'-separated path with no empty, "." or ".." part and no backslash.
bool is_safe_repo_path(const std::string& path);

// "dir/name-00001-of-00003.gguf" -> the three parts in order; any other name -> {name}.
std::vector<std::string> split_set_files(const std::string& file);

// The model file a tag means among `files` (llama.cpp's rule when it works from the
// cache): the first GGUF whose path holds the tag followed by '.' or '-' (any case),
// skipping mmproj / imatrix files and parts 2.. of split sets. Tag "" or "latest"
// tries Q4_K_M, then Q8_0, then takes the first model GGUF. "" when none fits.
std::string pick_model_file(const std::vector<std::string>& files, const std::string& tag);

}  // namespace strix::download
