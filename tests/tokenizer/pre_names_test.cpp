// The pre-tokenizer names that libllama splits with hand-coded code or unusual
// regexes (kimi-k2, afmoe, tiny_aya, superbpe, ...), against the reference
// libllama (pinned v0.5.0) on the llama3_1 byte-level vocabulary relabelled
// with each name; plus every other name the pinned library accepts and we do
// not implement, which must be refused by name.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "ref/libllama.h"
#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strix::tok::test {
namespace {

// (parity_test.cpp's global environment removes the temporary GGUFs.)

// Names the pinned libllama accepts but Strix refuses (see NamedPreRefusal).
const char* const kUnimplementedPreNames[] = {"youtu",     "jais-2", "sarvam-moe", "cohere2moe",
                                              "chameleon", "laguna", "whitespace"};

// Text aimed at the hand-coded splitters: Han runs next to kana, Hangul, Latin
// words with contractions, digit runs of every length mod 3 (ASCII and not),
// full-width forms, Thai/Khmer/Myanmar (afmoe's CJK class) and mixed spaces.
std::vector<std::string> cjk_texts() {
  return {
      "Kimi是一个人工智能助手，它's very helpful. 我们在2024年12月31日发布了K2模型，参数量为1000000000000。",
      "東京タワーは333メートルです。ひらがなとカタカナと漢字が混ざった文章ですね！",
      "한국어 문장입니다. 가격은 12,345원이고 전화번호는 010-1234-5678 입니다.",
      "中文English混合text测试：Hello世界！I'm here, you're there, we'll see. THEY'VE DONE IT'S",
      "数字：1 12 123 1234 12345 123456 1234567 12345678 abc1234def 99999x",
      "全角数字１２３４５と全角英字ＡＢＣ，以及中文标点。「引号」【括号】……——",
      "ภาษาไทยมี 123 คำ ខ្មែរ ၁၂၃ မြန်မာ ຄົນລາວ ･ﾊﾝｶｸｶﾅ ⼀⼆⼈",
      "汉字\n\n换行\r\n  两个空格   三个空格\t制表符 末尾空格  ",
      "𠀀𠀁𪜀 (extension B) 㐀㐁 (extension A) 豈更 (compatibility) ＡＩ",
      "e\u0301t\u00e9 naïve café résumé — Ελληνικά Русский текст 123 العربية ٠١٢٣٤",
      "'s 't 're ABC'S x'LL 1'd 中's 'Ve",
      "١٢٣٤٥٦٧ ½ ² ³ ⅷ 12³ 7½",
  };
}

struct Counts {
  size_t texts = 0, tokens = 0, id_mismatch = 0, detok_mismatch = 0;
};

Counts compare(const Tokenizer& ours, const ref::LlamaModel& ref, const std::vector<std::string>& texts,
               const std::string& label) {
  Counts c;
  int reported = 0;
  for (const std::string& text : texts) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {false, true}) {
        ++c.texts;
        const std::vector<int32_t> want = ref.tokenize(text, add_special, parse_special);
        const std::vector<int32_t> got = ours.tokenize(text, add_special, parse_special);
        c.tokens += want.size();
        if (got != want) {
          ++c.id_mismatch;
          if (reported++ < 3) {
            ADD_FAILURE() << label << " add_special=" << add_special << " parse_special=" << parse_special
                          << "\ntext: " << testing::PrintToString(text.substr(0, 200)) << "\nwant "
                          << testing::PrintToString(want) << "\ngot  " << testing::PrintToString(got);
          }
          continue;
        }
        if (ours.detokenize(got, false, parse_special) != ref.detokenize(want, false, parse_special)) {
          ++c.detok_mismatch;
        }
      }
    }
  }
  return c;
}

std::vector<std::string> texts_for_names() {
  const std::vector<std::string> all = corpus_texts();
  std::vector<std::string> texts;
  for (size_t i = 0; i < all.size(); i += 2) texts.push_back(all[i]);
  for (const std::string& t : cjk_texts()) texts.push_back(t);
  return texts;
}

class NamedPreParity : public testing::TestWithParam<const char*> {};

TEST_P(NamedPreParity, matches_libllama) {
  const std::string pre = GetParam();
  const std::string path = vocab_gguf("llama3_1", pre);
  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  const Counts c = compare(ours, ref, texts_for_names(), "pre=" + pre);
  std::printf("[parity] pre=%-14s texts=%zu ref_tokens=%zu id_mismatches=%zu detok_mismatches=%zu\n", pre.c_str(),
              c.texts, c.tokens, c.id_mismatch, c.detok_mismatch);
  EXPECT_EQ(c.id_mismatch, 0u);
  EXPECT_EQ(c.detok_mismatch, 0u);
}

std::string param_name(const testing::TestParamInfo<const char*>& i) {
  std::string n = i.param;
  for (char& ch : n) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(HandCoded, NamedPreParity,
                         testing::Values("kimi-k2", "afmoe", "superbpe", "tiny_aya", "granite-embed-multi-97m"),
                         param_name);

// Negative control: kimi-k2's splitter swapped for the gpt-4o regex (the
// closest regex list) must disagree with libllama on the CJK texts, and the
// digit grouping of afmoe swapped for deepseek-v3's \p{N}{1,3} likewise.
TEST(NamedPreNegativeControl, wrong_splitter_is_detected) {
  for (const auto& [name, wrong] :
       {std::pair<const char*, const char*>{"kimi-k2", "gpt-4o"}, {"afmoe", "deepseek-v3"}}) {
    const std::string path = vocab_gguf("llama3_1", name);
    const auto file = GgufFile::open(path);
    Vocab v = Vocab::load(*file);
    v.pre = pre_config(wrong);
    v.pre.clean_spaces = false;
    const Tokenizer ours(std::move(v));
    const ref::LlamaModel ref(path, {.vocab_only = true});
    size_t differ = 0;
    for (const std::string& text : cjk_texts()) {
      if (ours.tokenize(text, false, false) != ref.tokenize(text, false, false)) ++differ;
    }
    std::printf("[parity] negative control (%s splitter on %s): %zu of %zu texts differ\n", wrong, name, differ,
                cjk_texts().size());
    EXPECT_GE(differ, 3u) << name;
  }
}

// Names the pinned libllama accepts (its load() list, read off the library's
// strings) that Strix does not implement: each must be refused by name, and
// libllama must really accept it (else the name does not belong here).
TEST(NamedPreRefusal, unimplemented_libllama_names_are_refused_by_name) {
  for (const char* name : kUnimplementedPreNames) {
    try {
      pre_config(name);
      ADD_FAILURE() << name << ": expected a Refusal";
    } catch (const Refusal& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    const std::string path = vocab_gguf("llama3_1", name);
    EXPECT_NO_THROW(ref::LlamaModel(path, {.vocab_only = true})) << name << " is not known to libllama";
  }
}

}  // namespace
}  // namespace strix::tok::test
