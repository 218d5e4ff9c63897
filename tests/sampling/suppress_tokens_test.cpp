// tokenizer.ggml.suppress_tokens: Strix's loader (sampling/suppress_tokens.h)
// against libllama's llama_vocab_get_suppress_tokens on the same vocab-only
// GGUFs, and the malformed values it refuses.
#include "sampling/suppress_tokens.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "ref/libllama.h"
#include "sampling_test_util.h"

namespace strix::sampling::test {
namespace {

constexpr const char* kKey = "tokenizer.ggml.suppress_tokens";

fs::path scratch_dir() { return fs::temp_directory_path() / ("strix_suppress_" + std::to_string(getpid())); }

// Removes the scratch files when the test binary exits.
struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  }
} scratch_cleanup;

// stories260K's vocabulary (its tokenizer.* keys) plus `extra`, as a vocab-only GGUF.
std::string write_vocab(const std::string& name, const GgufValue* extra) {
  const auto src = GgufFile::open(kStories);
  GgufWriter w;
  for (const GgufKV& kv : src->kvs()) {
    if (kv.key == "general.architecture" || kv.key.rfind("tokenizer.", 0) == 0) w.set(kv.key, kv.value);
  }
  if (extra != nullptr) w.set(kKey, *extra);
  const fs::path dir = scratch_dir();
  fs::create_directories(dir);
  const std::string path = (dir / (name + ".gguf")).string();
  w.write(path);
  return path;
}

TEST(SuppressTokens, loaded_like_libllama) {
  REQUIRE_SHARED();
  const std::vector<std::vector<int32_t>> cases = {
      {}, {3}, {4, 8, 15, 16, 23, 42}, {7, 7, 1, 511}, {-1, 5, 512, 9, -7}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const GgufValue v = GgufValue::i32_array(cases[i]);
    const std::string path = write_vocab("case" + std::to_string(i), &v);
    const ref::LlamaModel ref(path, ref::LlamaModel::Options{.vocab_only = true});
    const auto file = GgufFile::open(path);
    EXPECT_EQ(load_suppress_tokens(*file, ref.n_vocab()), ref.suppress_tokens()) << "case " << i;
  }
  // absent key: nothing suppressed by either
  const std::string path = write_vocab("absent", nullptr);
  const ref::LlamaModel ref(path, ref::LlamaModel::Options{.vocab_only = true});
  EXPECT_TRUE(ref.suppress_tokens().empty());
  EXPECT_TRUE(load_suppress_tokens(*GgufFile::open(path), ref.n_vocab()).empty());
}

// Negative control: a different list loads differently.
TEST(SuppressTokens, negative_control_other_list_differs) {
  REQUIRE_SHARED();
  const GgufValue a = GgufValue::i32_array({4, 8});
  const GgufValue b = GgufValue::i32_array({4, 9});
  const ref::LlamaModel ref(write_vocab("a", &a), ref::LlamaModel::Options{.vocab_only = true});
  EXPECT_NE(load_suppress_tokens(*GgufFile::open(write_vocab("b", &b)), ref.n_vocab()), ref.suppress_tokens());
}

TEST(SuppressTokens, wrong_types_are_errors_naming_the_key) {
  REQUIRE_SHARED();
  const std::vector<std::pair<std::string, GgufValue>> bad = {
      {"u32", GgufValue::u32_array({1, 2})},
      {"string", GgufValue::str("1,2")},
      {"i64", GgufValue::array(GgufType::INT64, {GgufValue::i64(1)})},
  };
  for (const auto& [name, v] : bad) {
    const std::string path = write_vocab("bad_" + name, &v);
    // libllama refuses these models too ("invalid gguf type for tokenizer.ggml.suppress_tokens")
    EXPECT_THROW(ref::LlamaModel(path, ref::LlamaModel::Options{.vocab_only = true}), Error) << name;
    try {
      (void)load_suppress_tokens(*GgufFile::open(path), 512);
      ADD_FAILURE() << name << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(kKey), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace strix::sampling::test
