// The RWKV vocabulary type ("rwkv": escaped byte-string tokens, greedy longest
// match over a byte trie) on synthetic vocab-only GGUFs, against the pinned
// libllama: tokenize (all add_special/parse_special combinations), detokenize
// and token_to_piece for every id.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "ref/libllama.h"
#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strix::tok::test {
namespace {

// Byte tokens \x00..\xff (all of them unless `skip` >= 0), then multi-byte
// tokens using every escape form: \n \t \r \\ \xHH (including upper-case hex
// digits, which libllama reads with its own digit rule), raw UTF-8, a
// duplicate of a byte token, and control / user-defined tokens.
std::string rwkv_gguf(const std::string& name, int skip, bool with_unk) {
  std::vector<std::string> toks = {"<|endoftext|>"};
  std::vector<int32_t> types = {3};
  for (int b = 0; b < 256; ++b) {
    if (b == skip) continue;
    char e[8];
    std::snprintf(e, sizeof e, "\\x%02x", b);
    toks.push_back(e);
    types.push_back(1);
  }
  for (const char* t : {"ab", "abc", "abcd", "\\n\\n", "\\n\\n\\n", "hello", " world", " wor", "\\t\\t", "\\\\",
                        "\\r\\n", "The", " the", "ing", " and", "\\x41B", "\\xC3\\xa9", "\xc3\xa9t\xc3\xa9", "a",
                        "  ", "    ", "\xe4\xb8\xad\xe6\x96\x87", "\\'s", "1234", "12"}) {
    toks.push_back(t);
    types.push_back(1);
  }
  toks.push_back("<user>");
  types.push_back(4);
  toks.push_back("<unk>");
  types.push_back(2);
  GgufWriter w;
  w.set_str("general.architecture", "rwkv6");
  w.set_str("tokenizer.ggml.model", "rwkv");
  w.set("tokenizer.ggml.tokens", GgufValue::str_array(toks));
  w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  if (with_unk) w.set_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(toks.size() - 1));
  const std::string path = (temp_dir() / (name + ".gguf")).string();
  w.write(path);
  return path;
}

std::vector<std::string> rwkv_texts(bool with_z) {
  std::vector<std::string> texts = corpus_texts();
  for (const char* t : {"abcde ab abc", "The the and\n\n\nhello world wor\t\t\\\r\n", "<|endoftext|>x<user>y<unk>",
                        "A\xc3\xa9t\xc3\xa9 3B AB", "1234512 's", "    \xe4\xb8\xad\xe6\x96\x87  "}) {
    texts.push_back(t);
  }
  if (!with_z) {
    std::vector<std::string> kept;
    for (const std::string& t : texts) {
      if (t.find('z') == std::string::npos) kept.push_back(t);
    }
    texts.swap(kept);
    texts.push_back("no z here");
  }
  return texts;
}

size_t compare(const Tokenizer& ours, const ref::LlamaModel& ref, const std::vector<std::string>& texts) {
  size_t mismatches = 0, checked = 0;
  for (const std::string& text : texts) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {false, true}) {
        const auto want = ref.tokenize(text, add_special, parse_special);
        const auto got = ours.tokenize(text, add_special, parse_special);
        ++checked;
        if (got != want) {
          if (mismatches++ < 3) ADD_FAILURE() << testing::PrintToString(text.substr(0, 80));
          continue;
        }
        for (const bool remove : {false, true}) {
          if (ours.detokenize(got, remove, parse_special) != ref.detokenize(want, remove, parse_special)) ++mismatches;
        }
      }
    }
  }
  std::printf("[parity] rwkv: %zu tokenize calls, %zu mismatches\n", checked, mismatches);
  return mismatches;
}

TEST(RwkvSynthetic, matches_libllama) {
  const std::string path = rwkv_gguf("rwkv_full", -1, false);
  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  EXPECT_EQ(compare(ours, ref, rwkv_texts(true)), 0u);
  for (int32_t id = 0; id < ref.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      EXPECT_EQ(ours.token_to_piece(id, special), ref.token_to_piece(id, special)) << id;
    }
  }
}

// A byte without a token becomes the unknown token, one byte at a time.
TEST(RwkvSynthetic, missing_byte_becomes_unknown_token) {
  const std::string path = rwkv_gguf("rwkv_unk", 'q', true);
  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  EXPECT_EQ(compare(ours, ref, {"quick qq q", "aqb", "q"}), 0u);
  EXPECT_EQ(ours.tokenize("qq", false, false).size(), 2u);
}

// Without an unknown token libllama emits LLAMA_TOKEN_NULL (-1) for such a
// byte; we refuse to return an invalid id.
TEST(RwkvSynthetic, missing_byte_without_unknown_token_throws) {
  const std::string path = rwkv_gguf("rwkv_nounk", 'q', false);
  const Tokenizer ours = Tokenizer::from_file(path);
  EXPECT_THROW(ours.tokenize("aqb", false, false), Error);
  EXPECT_NO_THROW(ours.tokenize("ab", false, false));
}

// Negative control: the escaped multi-byte tokens (\n\n, \t\t, \r\n ...)
// made unreachable must disagree with libllama.
TEST(RwkvSynthetic, wrong_unescaping_is_detected) {
  const std::string path = rwkv_gguf("rwkv_full", -1, false);
  const auto file = GgufFile::open(path);
  Vocab v = Vocab::load(*file);
  for (auto& t : v.tokens) {
    // multi-byte tokens written with escapes lose their meaning
    const bool byte_token = t.text.size() == 4 && t.text.rfind("\\x", 0) == 0;
    if (!byte_token && t.text.find('\\') != std::string::npos) t.text = "#" + t.text;
  }
  const Tokenizer wrong(std::move(v));
  const ref::LlamaModel ref(path, {.vocab_only = true});
  size_t differ = 0;
  for (const char* text : {"\n\n\nx", "a\t\tb", "\r\n", "\n\n"}) {
    differ += wrong.tokenize(text, false, false) != ref.tokenize(text, false, false);
  }
  EXPECT_GE(differ, 3u);
}

}  // namespace
}  // namespace strix::tok::test
