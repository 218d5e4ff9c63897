// Behaviour of the tokenizer outside the corpus parity: refusals, the
// streaming detokenizer, and `strix tokenize` (checked against libllama).
#include "core/source_dir.h"
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/error.h"
#include "ref/libllama.h"
#include "tests/tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace strix::tok::test {
namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<uint8_t>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST(Tokenizer, unknown_pre_tokenizer_is_refused_by_name) {
  try {
    pre_config("no-such-pre");
    FAIL() << "expected a Refusal";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-pre"), std::string::npos) << e.what();
  }
  // known to libllama but not implemented (see pre_names_test.cpp)
  EXPECT_THROW(pre_config("whitespace"), Refusal);
  EXPECT_NO_THROW(pre_config("youtu"));
  EXPECT_NO_THROW(pre_config(""));  // missing -> "default", as libllama
}

TEST(Tokenizer, unsupported_vocab_model_is_refused_by_name) {
  GgufWriter w;
  w.set_str("general.architecture", "plamo2");
  w.set_str("tokenizer.ggml.model", "plamo2");
  w.set("tokenizer.ggml.tokens", GgufValue::str_array({"[PAD]", "a"}));
  const std::string path = (temp_dir() / "plamo2.gguf").string();
  w.write(path);
  try {
    Tokenizer::from_file(path);
    FAIL() << "expected a Refusal";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("'plamo2'"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, lenient_utf8_decoding_matches_libllama_rules) {
  // a bad byte becomes U+FFFD and decoding resumes at the next byte
  EXPECT_EQ(decode_utf8_lenient("a\xff"
                                "b"),
            (std::vector<uint32_t>{'a', 0xFFFD, 'b'}));
  EXPECT_EQ(decode_utf8_lenient("\xe2\x82"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
  EXPECT_EQ(decode_utf8_lenient("\xc0\xaf"), (std::vector<uint32_t>{0x2F}));  // overlong is accepted
  EXPECT_EQ(byte_to_unicode(' '), "\xc4\xa0");                                // GPT-2 'Ġ'
  EXPECT_EQ(unicode_to_byte(0x120), ' ');
}

// Streaming must give the same text as one detokenize() call, and never emit a
// partial UTF-8 character for valid text.
TEST(StreamDetokenizer, never_splits_a_character) {
  for (const char* package : {"llama2", "llama3_1"}) {
    const Tokenizer t = Tokenizer::from_file(vocab_gguf(package));
    size_t chunks = 0;
    for (const std::string& text : corpus_texts()) {
      const std::vector<int32_t> ids = t.tokenize(text, false, true);
      StreamDetokenizer s(t, /*special=*/true);
      std::string joined;
      for (const int32_t id : ids) {
        const std::string part = s.push(id);
        if (valid_utf8(text)) {
          EXPECT_TRUE(valid_utf8(part)) << package << ": " << testing::PrintToString(part);
        }
        joined += part;
        ++chunks;
      }
      joined += s.flush();
      // the stream is the pieces joined (no clean_spaces pass, which needs lookahead)
      std::string pieces;
      for (size_t i = 0; i < ids.size(); ++i)
        pieces += t.token_to_piece(ids[i], true, i == 0 && t.vocab().add_space_prefix);
      EXPECT_EQ(joined, pieces) << package;
      if (!t.vocab().clean_spaces) {
        EXPECT_EQ(joined, t.detokenize(ids, false, true)) << package;
      }
    }
    EXPECT_GT(chunks, 1000u);
  }
}

// gemma4 ("gemma4" model: BPE over raw UTF-8 with spaces as U+2581, <0xNN>
// byte tokens, newline runs kept whole) on a small synthetic vocabulary,
// against libllama. Texts avoid newline runs that are not tokens: libllama
// asserts on those.
TEST(Gemma4Synthetic, matches_libllama) {
  std::vector<std::string> toks = {"<pad>", "<eos>", "<bos>", "<unk>"};
  std::vector<int32_t> types = {3, 3, 3, 2};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    toks.push_back(name);
    types.push_back(6);
  }
  for (const char* t : {"\xe2\x96\x81", "a", "b", "c", "ab", "abc",
                        "\xe2\x96\x81"
                        "a",
                        "\xe2\x96\x81"
                        "ab",
                        "\n", "\n\n", "\xc3\xa9",
                        "\xe2\x96\x81"
                        "c",
                        "ca", "\t", "<start_of_turn>"}) {
    toks.push_back(t);
    types.push_back(std::string(t) == "<start_of_turn>" ? 4 : 1);
  }
  GgufWriter w;
  w.set_str("general.architecture", "llama");
  w.set_str("tokenizer.ggml.model", "gemma4");
  w.set("tokenizer.ggml.tokens", GgufValue::str_array(toks));
  w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  w.set("tokenizer.ggml.scores", GgufValue::f32_array(std::vector<float>(toks.size(), 0.0f)));
  w.set("tokenizer.ggml.merges", GgufValue::str_array({"a b", "ab c", "\xe2\x96\x81 a",
                                                       "\xe2\x96\x81"
                                                       "a b",
                                                       "\xe2\x96\x81 c", "c a", "\n \n"}));
  w.set_u32("tokenizer.ggml.bos_token_id", 2);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_u32("tokenizer.ggml.unknown_token_id", 3);
  w.set_u32("tokenizer.ggml.padding_token_id", 0);
  const std::string path = (temp_dir() / "gemma4_synth.gguf").string();
  w.write(path);

  const Tokenizer ours = Tokenizer::from_file(path);
  const ref::LlamaModel ref(path, {.vocab_only = true});
  const std::vector<std::string> texts = {"abc",
                                          " ab c",
                                          "ca ab",
                                          "a\nb",
                                          "a\n\nb",
                                          "\xc3\xa9 ab",
                                          "xyz abc",
                                          "<bos>ab<eos>",
                                          "  a",
                                          "\tab",
                                          "<start_of_turn>ab c",
                                          "\xff\xfe ab",
                                          ""};
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
      }
    }
  }
  for (int32_t id = 0; id < ref.n_vocab(); ++id) {
    for (const bool special : {false, true}) {
      EXPECT_EQ(ours.token_to_piece(id, special), ref.token_to_piece(id, special)) << id;
    }
  }
}

// WordPiece ("bert") on a small synthetic vocabulary, against libllama, with
// the BertNormalizer defaults (lowercase + strip accents) and with both off.
TEST(WpmSynthetic, matches_libllama) {
  for (const bool lowercase : {true, false}) {
    std::vector<std::string> toks = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    std::vector<int32_t> types = {3, 2, 3, 3, 3};
    for (const char* t : {"\xe2\x96\x81hello",
                          "\xe2\x96\x81world",
                          "\xe2\x96\x81Hello",
                          "\xe2\x96\x81un",
                          "aff",
                          "able",
                          "\xe2\x96\x81"
                          "a",
                          "b",
                          "c",
                          "\xe2\x96\x81,",
                          "\xe2\x96\x81!",
                          "\xe2\x96\x81.",
                          "\xe2\x96\x81\xe4\xb8\xad",
                          "\xe2\x96\x81\xe6\x96\x87",
                          "\xe2\x96\x81"
                          "cafe",
                          "\xe2\x96\x81"
                          "caf\xc3\xa9",
                          "\xe2\x96\x81"
                          "ecole",
                          "\xe2\x96\x81$",
                          "\xe2\x96\x81"
                          "12",
                          "3",
                          "\xe2\x96\x81\xd0\xbf\xd1\x80\xd0\xb8",
                          "\xd0\xb2\xd0\xb5\xd1\x82"}) {
      toks.push_back(t);
      types.push_back(1);
    }
    GgufWriter w;
    w.set_str("general.architecture", "llama");
    w.set_str("tokenizer.ggml.model", "bert");
    w.set("tokenizer.ggml.tokens", GgufValue::str_array(toks));
    w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
    w.set_u32("tokenizer.ggml.bos_token_id", 2);
    w.set_u32("tokenizer.ggml.unknown_token_id", 1);
    w.set_u32("tokenizer.ggml.seperator_token_id", 3);
    w.set_u32("tokenizer.ggml.padding_token_id", 0);
    w.set_u32("tokenizer.ggml.mask_token_id", 4);
    if (!lowercase) w.set_bool("tokenizer.ggml.normalizer.lowercase", false);
    const std::string path = (temp_dir() / (std::string("wpm_synth_") + (lowercase ? "lc" : "cs") + ".gguf")).string();
    w.write(path);

    const Tokenizer ours = Tokenizer::from_file(path);
    const ref::LlamaModel ref(path, {.vocab_only = true});
    const std::vector<std::string> texts = {
        "Hello, World!",
        "unaffable",
        "Caf\xc3\xa9. \xe4\xb8\xad\xe6\x96\x87",
        "xyz hello",
        "a\tb  c\n\nabc",
        "\xc3\x89"
        "COLE ecole",
        "[CLS] hello [SEP]",
        "hello[MASK]",
        "\x01hello\xff world",
        "$12 123 12.3",
        "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 \xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
        "hello\xe2\x80\x8bworld",
        "",
        "   "};
    for (const std::string& text : texts) {
      for (const bool add_special : {false, true}) {
        for (const bool parse_special : {false, true}) {
          const auto want = ref.tokenize(text, add_special, parse_special);
          EXPECT_EQ(ours.tokenize(text, add_special, parse_special), want)
              << testing::PrintToString(text) << " lowercase=" << lowercase << " add_special=" << add_special
              << " parse_special=" << parse_special;
          for (const bool remove : {false, true}) {
            EXPECT_EQ(ours.detokenize(want, remove, parse_special), ref.detokenize(want, remove, parse_special))
                << testing::PrintToString(text);
          }
        }
      }
    }
    for (int32_t id = 0; id < ref.n_vocab(); ++id) {
      for (const bool special : {false, true}) {
        EXPECT_EQ(ours.token_to_piece(id, special), ref.token_to_piece(id, special)) << id;
      }
    }
  }
}

// Unigram ("t5") on a small synthetic vocabulary, against libllama, for
// add_space_prefix x remove_extra_whitespaces x (no charsmap | a hand-built one).
TEST(UgmSynthetic, matches_libllama) {
  const std::vector<std::pair<std::string, float>> normal = {{"\xe2\x96\x81", -2.0f},
                                                             {"\xe2\x96\x81"
                                                              "a",
                                                              -3.0f},
                                                             {"\xe2\x96\x81"
                                                              "ab",
                                                              -4.5f},
                                                             {"a", -2.5f},
                                                             {"b", -2.6f},
                                                             {"c", -2.7f},
                                                             {"abc", -5.0f},
                                                             {"\xe2\x96\x81"
                                                              "abc",
                                                              -6.0f},
                                                             {"\xe2\x96\x81hello", -4.0f},
                                                             {"hello", -5.0f},
                                                             {"\xe2\x96\x81world", -4.2f},
                                                             {"\xc3\xa9", -3.1f},
                                                             {"\xe2\x96\x81wor", -3.0f},
                                                             {"ld", -3.0f},
                                                             {"wor", -2.9f}};
  // A hand-built XCDA charsmap: "A" -> "a", "AB" -> "x", "Q" -> "kw" (nodes: bits
  // 10..30 base, bit 8 leaf, bits 0..7 the byte checked; bit 31 marks a value).
  std::vector<uint32_t> xcda(0x400, 0);
  xcda[0] = 0x100u << 10;                                // root base
  xcda[0x100 ^ 'A'] = (1u << 10) | (1u << 8) | 'A';      // leaf, base 1 -> 0x140
  xcda[0x140] = (1u << 31) | 0;                          // "a"
  xcda[0x140 ^ 'B'] = (0x300u << 10) | (1u << 8) | 'B';  // leaf -> 0x202
  xcda[0x102 ^ 0x300] = (1u << 31) | 5;                  // "x"
  xcda[0x100 ^ 'Q'] = (1u << 10) | (1u << 8) | 'Q';      // leaf -> 0x150
  xcda[0x150] = (1u << 31) | 2;                          // "kw"
  std::vector<GgufValue> charsmap;
  auto put_u32 = [&](uint32_t x) {
    for (int k = 0; k < 4; ++k) charsmap.push_back(GgufValue::u8(static_cast<uint8_t>(x >> (8 * k))));
  };
  put_u32(static_cast<uint32_t>(xcda.size() * 4));
  for (const uint32_t x : xcda) put_u32(x);
  for (const char c : std::string("a\0kw\0x\0", 7)) charsmap.push_back(GgufValue::u8(static_cast<uint8_t>(c)));

  for (const bool prefix : {true, false}) {
    for (const bool merge : {true, false}) {
      for (const bool with_map : {false, true}) {
        std::vector<std::string> toks = {"<pad>", "</s>", "<unk>", "<extra_id_0>", "\xe2\x96\x81xyz"};
        std::vector<int32_t> types = {3, 3, 2, 4, 5};
        std::vector<float> scores = {0, 0, 0, 0, -1.0f};
        for (const auto& [t, sc] : normal) {
          toks.push_back(t);
          types.push_back(1);
          scores.push_back(sc);
        }
        GgufWriter w;
        w.set_str("general.architecture", "llama");
        w.set_str("tokenizer.ggml.model", "t5");
        w.set("tokenizer.ggml.tokens", GgufValue::str_array(toks));
        w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
        w.set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
        w.set_bool("tokenizer.ggml.add_space_prefix", prefix);
        w.set_bool("tokenizer.ggml.remove_extra_whitespaces", merge);
        w.set_u32("tokenizer.ggml.eos_token_id", 1);
        w.set_u32("tokenizer.ggml.unknown_token_id", 2);
        w.set_u32("tokenizer.ggml.padding_token_id", 0);
        if (with_map) w.set("tokenizer.ggml.precompiled_charsmap", GgufValue::array(GgufType::UINT8, charsmap));
        const std::string path = (temp_dir() / ("ugm_synth_" + std::to_string(prefix) + std::to_string(merge) +
                                                std::to_string(with_map) + ".gguf"))
                                     .string();
        w.write(path);

        const Tokenizer ours = Tokenizer::from_file(path);
        const ref::LlamaModel ref(path, {.vocab_only = true});
        const std::vector<std::string> texts = {"abc",
                                                "a b  c",
                                                "  hello   world  ",
                                                "hello<extra_id_0>world",
                                                "<extra_id_0",
                                                "<extra x",
                                                "\xc3\xa9 ab",
                                                "xyz q xyz",
                                                "\xff abc\xc3",
                                                "",
                                                "   ",
                                                "<pad>a</s>",
                                                "helloworld",
                                                "qqq abc zz",
                                                "Abc ABc QQ AAB xA",
                                                "A B",
                                                "helloA worQ"};
        for (const std::string& text : texts) {
          for (const bool add_special : {false, true}) {
            for (const bool parse_special : {false, true}) {
              const auto want = ref.tokenize(text, add_special, parse_special);
              EXPECT_EQ(ours.tokenize(text, add_special, parse_special), want)
                  << testing::PrintToString(text) << " prefix=" << prefix << " merge=" << merge
                  << " add_special=" << add_special << " parse_special=" << parse_special;
              for (const bool remove : {false, true}) {
                EXPECT_EQ(ours.detokenize(want, remove, parse_special), ref.detokenize(want, remove, parse_special))
                    << testing::PrintToString(text);
              }
            }
          }
        }
        for (int32_t id = 0; id < ref.n_vocab(); ++id) {
          for (const bool special : {false, true}) {
            EXPECT_EQ(ours.token_to_piece(id, special), ref.token_to_piece(id, special)) << id;
          }
        }
        if (with_map) {  // negative control: the same vocabulary without its charsmap disagrees
          auto file = GgufFile::open(path);
          Vocab nomap = Vocab::load(*file);
          nomap.precompiled_charsmap.clear();
          const std::string text = "Abc ABc QQ AAB xA";
          EXPECT_NE(Tokenizer(std::move(nomap)).tokenize(text, false, false), ref.tokenize(text, false, false));
        }
      }
    }
  }
}

std::string run(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(TokenizeCli, ids_and_pieces_match_libllama) {
  const std::string path = vocab_gguf("qwen3");
  const ref::LlamaModel ref(path, {.vocab_only = true});
  const std::string text = "Hello <|im_start|>world, 12345!";
  const std::string bin = STRIX_BINARY_PATH;

  auto ids_text = [](const std::vector<int32_t>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) s.append(", ");
      s.append(std::to_string(ids[i]));
    }
    s.append("]\n");
    return s;
  };
  EXPECT_EQ(run(bin + " tokenize -m " + path + " -p '" + text + "' --ids"), ids_text(ref.tokenize(text, true, true)));
  EXPECT_EQ(run(bin + " tokenize -m " + path + " -p '" + text + "' --ids --no-bos --no-parse-special"),
            ids_text(ref.tokenize(text, false, false)));

  std::string want;
  const std::vector<int32_t> ids = ref.tokenize(text, true, true);
  for (const int32_t id : ids) {
    char head[32];
    std::snprintf(head, sizeof head, "%6d -> '", id);
    want += head + ref.token_to_piece(id, true) + "'\n";
  }
  want += "Total number of tokens: " + std::to_string(ids.size()) + "\n";
  EXPECT_EQ(run(bin + " tokenize -m " + path + " -p '" + text + "' --show-count"), want);

  const std::string file = (temp_dir() / "prompt.txt").string();
  std::FILE* f = std::fopen(file.c_str(), "wb");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  EXPECT_EQ(run(bin + " tokenize -m " + path + " -f " + file + " --ids"), ids_text(ref.tokenize(text, true, true)));
  EXPECT_EQ(run("printf '%s' '" + text + "' | " + bin + " tokenize -m " + path + " --stdin --ids"),
            ids_text(ref.tokenize(text, true, true)));
}

}  // namespace
}  // namespace strix::tok::test
