// A vocab-only GGUF (general.architecture llama + the tokenizer.* keys) made
// from an imported vocabulary (synth::import_vocab: "llama3_1", a tokenizer.json
// ...), written to a scratch directory; `use(path)` loads what it needs, then
// the directory is removed. Shared by the grammar and sampling tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gguf/writer.h"
#include "synth/vocab_import.h"

namespace strix::test {

template <class Use>
auto with_vocab_only_gguf(const std::string& source, Use&& use) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("strix_vocab_" + source + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / (source + ".gguf")).string();
  const synth::ImportedVocab v = synth::import_vocab(source);
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  for (const auto& kv : v.kvs) w.set(kv.key, kv.value);
  w.write(path);
  auto result = use(path);
  fs::remove_all(dir);
  return result;
}

}  // namespace strix::test
