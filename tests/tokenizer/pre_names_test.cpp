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
const char* const kUnimplementedPreNames[] = {"whitespace"};

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
  const Counts c = compare_corpus(ours, ref, texts_for_names(), "pre=" + pre);
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

// Names whose regex lists (and flags) were established against the pinned
// library: youtu (CJK classes + tiny_aya-like main, ignore_merges), jais-2
// (cascading whitespace, clean_spaces), cohere2moe (= tiny_aya), laguna (lines,
// then qwen2), chameleon (6 regexes), sarvam-moe (gemma4-like raw UTF-8).
INSTANTIATE_TEST_SUITE_P(RegexLists, NamedPreParity,
                         testing::Values("youtu", "jais-2", "cohere2moe", "laguna", "chameleon", "sarvam-moe"),
                         param_name);

// Negative control for the lists above: each name tokenized with the nearest
// wrong list (or a wrong flag) must disagree with libllama on some texts.
TEST(RegexListNegativeControl, wrong_list_or_flag_is_detected) {
  struct Case {
    const char* name;
    const char* wrong;
    bool clean_spaces;
  };
  for (const Case& k : {Case{"youtu", "tiny_aya", false}, Case{"jais-2", "llama3", true},
                        Case{"laguna", "qwen2", false}, Case{"chameleon", "gpt-2", false},
                        Case{"cohere2moe", "cohere2moe", true}}) {
    const std::string path = vocab_gguf("llama3_1", k.name);
    const std::string base = vocab_gguf("llama3_1", k.wrong == std::string("cohere2moe") ? "tiny_aya" : k.wrong);
    const auto file = GgufFile::open(base);
    Vocab v = Vocab::load(*file);
    v.pre = pre_config(k.wrong);
    v.clean_spaces = k.clean_spaces;
    v.add_bos = false;
    const Tokenizer ours(std::move(v));
    const ref::LlamaModel ref(path, {.vocab_only = true});
    size_t differ = 0;
    for (const std::string& text : texts_for_names()) {
      if (ours.tokenize(text, false, false) != ref.tokenize(text, false, false) ||
          ours.detokenize(ref.tokenize(text, false, false), false, false) !=
              ref.detokenize(ref.tokenize(text, false, false), false, false)) {
        ++differ;
      }
    }
    std::printf("[parity] negative control (%s list/flags on %s): %zu texts differ\n", k.wrong, k.name, differ);
    EXPECT_GE(differ, 1u) << k.name;
  }
}

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

// sarvam-moe on the vocabulary shape it is made for (SPM-style BPE: U+2581
// for spaces, <0xNN> byte tokens) under a "gpt2" model, against libllama.
// Texts avoid newline runs: libllama asserts on those outside gemma4.
TEST(SarvamSynthetic, matches_libllama) {
  std::vector<std::string> toks = {"<pad>", "<eos>", "<bos>", "<unk>"};
  std::vector<int32_t> types = {3, 3, 3, 2};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    toks.push_back(name);
    types.push_back(6);
  }
  const std::string sp = "\xe2\x96\x81";  // U+2581
  for (const std::string& t : {sp, std::string("a"), std::string("b"), std::string("c"), std::string("ab"),
                               std::string("abc"), sp + "a", sp + "ab", std::string("\n"), std::string("\xc3\xa9"),
                               sp + "c", std::string("ca"), std::string("."), sp + sp}) {
    toks.push_back(t);
    types.push_back(1);
  }
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("tokenizer.ggml.model", "gpt2");
  w.set_str("tokenizer.ggml.pre", "sarvam-moe");
  w.set("tokenizer.ggml.tokens", GgufValue::str_array(toks));
  w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  w.set("tokenizer.ggml.merges",
        GgufValue::str_array({"a b", "ab c", sp + " a", sp + "a b", sp + " c", "c a", sp + " " + sp}));
  w.set_u32("tokenizer.ggml.bos_token_id", 2);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  const std::string path = (temp_dir() / "sarvam_synth.gguf").string();
  w.write(path);

  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  const std::vector<std::string> texts = {"abc",    " ab c", "ca ab",  "a\nb",     "\xc3\xa9 ab .", "xyz abc",
                                          "<bos>ab", "  a",   "\tab ", "\xff ab", "a . b",         ""};
  size_t checked = 0;
  for (const std::string& text : texts) {
    for (const bool add_special : {false, true}) {
      for (const bool parse_special : {false, true}) {
        const auto want = ref.tokenize(text, add_special, parse_special);
        EXPECT_EQ(ours.tokenize(text, add_special, parse_special), want)
            << testing::PrintToString(text) << " add_special=" << add_special << " parse_special=" << parse_special;
        for (const bool remove : {false, true}) {
          EXPECT_EQ(ours.detokenize(want, remove, parse_special), ref.detokenize(want, remove, parse_special))
              << testing::PrintToString(text);
        }
        ++checked;
      }
    }
  }
  for (int32_t id = 0; id < ref.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      EXPECT_EQ(ours.token_to_piece(id, special), ref.token_to_piece(id, special)) << id;
    }
  }
  EXPECT_EQ(checked, texts.size() * 4);

  // negative control: without the U+2581 escaping the texts with spaces differ
  const auto file = GgufFile::open(path);
  Vocab wrong = Vocab::load(*file);
  wrong.escape_whitespaces = false;
  const Tokenizer bad(std::move(wrong));
  size_t differ = 0;
  for (const std::string& text : texts) differ += bad.tokenize(text, false, false) != ref.tokenize(text, false, false);
  EXPECT_GE(differ, 5u);
}

}  // namespace
}  // namespace strix::tok::test
