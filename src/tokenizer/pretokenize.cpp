#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include <algorithm>
#include <initializer_list>

#include "core/error.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

// ---------------------------------------------------------------------------
// The regex lists (facts from llama.cpp's llama-vocab.cpp, as the pinned
// libllama.v0.5.0.so holds them; `strings` on the library shows the same text).
namespace {

const char* const kGpt2 = R"RE('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))RE";
const char* const kLlama3 =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kQwen2 =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kQwen35 =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kDeepseek3Main =
    R"RE([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373"
    "\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f"
    "\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77"
    "\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d"
    "\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4"
    "\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139"
    "\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
    "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a"
    "\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2"
    "\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+";
const char* const kDeepseekLlmPunct = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+";
const char* const kCjkHangul = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+";
const char* const kCjkKana = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+";
const char* const kTekken =
    R"RE([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kGpt4o =
    R"RE([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
// gpt-4o's list with \p{M} next to \p{L} in the lookaheads.
const char* const kGpt4oMarks =
    R"RE([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kPoro = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+";
const char* const kSeedCoder =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kBailing =
    R"RE('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)RE";
const char* const kExaoneMoe =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)RE";
const char* const kMiniCpm5 =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kUfakzeka =
    R"RE([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";

// afmoe's second regex: CJK, kana, halfwidth kana, Kangxi radicals, Thai, Lao,
// Khmer, Myanmar, Hangul. Transcribed from the bytes in the pinned library
// (its "CJK Compatibility" range starts at U+8C48, not U+F900: the source text
// went through NFC, which maps U+F900 to U+8C48).
const char* const kAfmoeCjk =
    "[\u4e00-\u9fff\u3400-\u4dbf\u8c48-\ufaff\u3040-\u309f\u30a0-\u30ff\uff65-\uff9f\u2f00-\u2fdf"
    "\u0e40-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f\uaa60-\uaa7f\ua9e0-\ua9ff\uac00-\ud7af"
    "\u1100-\u11ff]+";

// Names libllama hands to a hand-coded splitter instead of a regex engine (see
// split_custom below); the texts are the ones libllama matches on.
const char* const kKimiK2Trigger = R"RE(\p{Han}+)RE";
const char* const kAfmoeDigits = R"RE(\p{AFMoE_digits})RE";
const char* const kTinyAyaMain =
    R"RE([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
const char* const kTinyAyaDigits = R"RE(\d{1,3}(?=(?:\d{3})*\b))RE";

// youtu: Hangul/jamo, CJK punctuation, bopomofo and CJK/kana runs first (the
// bytes in the pinned library), then tiny_aya's main regex with single digits.
const char* const kYoutuCjk =
    "[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a\uff1b\uff0c\u3001-\u303f"
    "\ufe30-\ufe4f]+|[\u3105-\u312f]+|[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+";
const char* const kYoutuMain =
    R"RE([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)RE";
// jais-2: llama3's regex with whitespace runs cut into 512, 256, ... 4, 1-2, 1.
const char* const kJais2 =
    R"RE((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})RE";
// chameleon: sentinel and image tokens, whitespace, single digits, single
// punctuation, then gpt-2.
const char* const kChameleonSentinel = "<sentinel:[0-9]+>";
const char* const kChameleonImage = "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z";
const char* const kChameleonSpace = R"RE(([\t\n]|    |  ))RE";
const char* const kChameleonPunct = R"RE([\p{P}!-/:-@\[-`{-~])RE";
// Lines and newline runs (gemma4, sarvam-moe, laguna's first split).
const char* const kLines = R"RE([^\n]+|[\n]+)RE";

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

}  // namespace

PreConfig pre_config(const std::string& given) {
  PreConfig c;
  c.name = given.empty() ? "default" : given;
  const std::string& n = c.name;
  auto set = [&](std::initializer_list<const char*> res) { c.regexes.assign(res.begin(), res.end()); };

  if (n == "default") {
    set({R"RE([\p{P}\$\+<=>\^~\|]+)RE", kGpt2, R"RE(\p{N}+)RE", "[0-9][0-9][0-9]"});
  } else if (n == "minicpm5") {
    set({R"RE(\p{N}{1,3})RE", kMiniCpm5});
    c.ignore_merges = true;
  } else if (one_of(n, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                        "jina-v5-nano"})) {
    set({kLlama3});
    c.ignore_merges = true;
    c.add_bos = true;
  } else if (n == "deepseek-llm") {
    set({"[\r\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, R"RE(\s+$)RE", kCjkHangul, R"RE(\p{N}+)RE"});
    c.clean_spaces = false;
  } else if (n == "deepseek-coder") {
    set({"[\r\n]", R"RE(\s?\p{L}+)RE", R"RE(\s?\p{P}+)RE", kCjkHangul, R"RE(\p{N})RE"});
    c.clean_spaces = false;
  } else if (one_of(n, {"deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"})) {
    set({R"RE(\p{N}{1,3})RE", kCjkKana, kDeepseek3Main});
    c.clean_spaces = false;
  } else if (n == "falcon") {
    set({R"RE([\p{P}\$\+<=>\^~\|`]+)RE", kGpt2, "[0-9][0-9][0-9]"});
  } else if (one_of(n, {"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
    set({R"RE(\p{N})RE", kGpt2});
  } else if (one_of(n, {"command-r", "smollm"})) {
    set({R"RE(\p{N})RE", kGpt2});
    c.clean_spaces = false;
  } else if (one_of(n, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
                        "mellum", "modern-bert", "mpt", "olmo", "jais", "exaone4", "jina-v1-en", "jina-v2-code",
                        "roberta-bpe"})) {
    set({kGpt2});
  } else if (one_of(n, {"trillion", "granite-docling"})) {
    set({kGpt2});
    c.clean_spaces = false;
  } else if (one_of(n, {"gemma4", "granite-embed-multi-311m"})) {
    set({kLines});
    c.byte_encode = false;
    c.escape_whitespaces = true;
  } else if (one_of(n, {"stablelm2", "megrez"})) {
    set({kQwen2});
  } else if (one_of(n, {"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open", "grok-2"})) {
    set({kQwen2});
    c.clean_spaces = false;
  } else if (n == "qwen35") {
    set({kQwen35});
    c.clean_spaces = false;
  } else if (one_of(n, {"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"})) {
    // chatglm4's list is the llama3 regex too; its special_bos_id = null is
    // applied by the vocabulary loader.
    set({kLlama3});
  } else if (one_of(n, {"poro-chat"})) {
    set({kPoro});
    c.clean_spaces = false;
  } else if (one_of(n, {"bloom", "gpt3-finnish"})) {
    set({kPoro});
  } else if (n == "viking") {
    set({kPoro, R"RE(\p{N})RE"});
    c.clean_spaces = false;
  } else if (n == "tekken") {
    set({kTekken});
    c.clean_spaces = false;
    c.ignore_merges = true;
    c.add_bos = true;
  } else if (one_of(n, {"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) {
    set({kGpt4o});
    c.clean_spaces = false;
  } else if (n == "seed-coder") {
    set({kSeedCoder});
    c.clean_spaces = false;
  } else if (one_of(n, {"bailingmoe", "bailingmoe2", "llada-moe"})) {
    set({kBailing});
    c.clean_spaces = false;
  } else if (n == "exaone-moe") {
    set({kExaoneMoe});
  } else if (n == "ufakzeka") {
    set({kUfakzeka});
    c.clean_spaces = false;
  } else if (n == "kimi-k2") {
    set({kKimiK2Trigger});
    c.clean_spaces = false;
  } else if (n == "afmoe") {
    set({kAfmoeDigits, kAfmoeCjk, kDeepseek3Main});
    c.clean_spaces = false;
  } else if (n == "superbpe") {
    set({R"RE(\p{N}+)RE", R"RE((?=(\d{3})+(?!\d)))RE"});
    c.clean_spaces = false;
  } else if (n == "granite-embed-multi-97m") {
    set({kGpt4oMarks});
    c.clean_spaces = false;
    c.ignore_merges = true;
  } else if (n == "tiny_aya") {
    set({kTinyAyaDigits, kTinyAyaMain});
    c.clean_spaces = false;
  } else if (n == "cohere2moe") {
    // the pinned library maps it to tiny_aya's list and flags
    set({kTinyAyaDigits, kTinyAyaMain});
    c.clean_spaces = false;
  } else if (n == "youtu") {
    set({kYoutuCjk, kYoutuMain});
    c.clean_spaces = false;
    c.ignore_merges = true;
  } else if (n == "jais-2") {
    set({kJais2});
  } else if (n == "laguna") {
    set({kLines, kQwen2});
    c.clean_spaces = false;
  } else if (n == "chameleon") {
    set({kChameleonSentinel, kChameleonImage, kChameleonSpace, R"RE(\p{N})RE", kChameleonPunct, kGpt2});
    c.clean_spaces = false;
  } else if (n == "sarvam-moe") {
    // gemma4's shape (U+2581 for spaces, raw UTF-8) without its newline-run
    // rule, which libllama keys to the gemma4 type only
    set({kLines});
    c.byte_encode = false;
    c.escape_whitespaces = true;
    c.clean_spaces = false;
  } else if (n == "whitespace") {
    // Known to the pinned libllama, which keys its whitespace-dropping session
    // to tokenizer.ggml.model "whitespace" (not implemented here); with a gpt2
    // model its `\S+` split keeps whitespace runs and libllama aborts on any
    // run of 2+ code points (GGML_ASSERT in find_bpe_rank). Refuse.
    throw Refusal("tokenizer: pre-tokenizer '" + n + "' is known to libllama but not implemented in Strix");
  } else {
    throw Refusal("tokenizer: unknown or unsupported pre-tokenizer '" + n + "'");
  }
  return c;
}

// ---------------------------------------------------------------------------
namespace {

const char* const kCategoryNames[] = {"\\p{N}",  "\\p{L}",  "\\p{P}",  "\\p{M}",  "\\p{S}",
                                      "\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"};

// The collapsed byte and the ASCII members of a category, as libllama rewrites
// \p{X}; nullptr for a name it does not know.
const char* category_class(const std::string& name) {
  if (name == "\\p{N}") return "\xD1\x30-\x39";
  if (name == "\\p{L}" || name == "\\p{Lu}" || name == "\\p{Ll}" || name == "\\p{Lt}" || name == "\\p{Lm}" ||
      name == "\\p{Lo}")
    return "\xD2\x41-\x5A\x61-\x7A";
  if (name == "\\p{P}") return "\xD3\x21-\x23\x25-\x2A\x2C-\x2F\x3A-\x3B\x3F-\x40\\\x5B-\\\x5D\x5F\\\x7B\\\x7D";
  if (name == "\\p{M}") return "\xD4";
  if (name == "\\p{S}") return "\xD5\\\x24\\\x2B\x3C-\x3E\x5E\x60\\\x7C";
  return nullptr;
}

bool uses_categories(const std::string& re) {
  return std::any_of(std::begin(kCategoryNames), std::end(kCategoryNames),
                     [&](const char* c) { return re.find(c) != std::string::npos; });
}

// \p{X} -> [<byte><ascii members>] (no brackets when already inside a class).
std::string collapse_regex(const std::string& re) {
  std::string out;
  bool inside = false;
  for (size_t i = 0; i < re.size(); ++i) {
    const char ch = re[i];
    if (ch == '[' && (i == 0 || re[i - 1] != '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && ch == ']' && re[i - 1] != '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (ch == '\\' && i + 3 < re.size() && re[i + 1] == 'p' && re[i + 2] == '{') {
      const size_t close = re.find('}', i + 3);
      if (close != std::string::npos && close <= i + 10) {
        if (const char* cls = category_class(re.substr(i, close - i + 1))) {
          if (!inside) out += '[';
          out += cls;
          if (!inside) out += ']';
          i = close;
          continue;
        }
      }
    }
    out += ch;
  }
  return out;
}

// libllama's hand-coded splitters, selected by the exact regex text.
enum class Custom { kNone, kKimiK2, kDigitGroups };

struct Compiled {
  pcre2_code* code = nullptr;
  bool collapsed = false;
  Custom custom = Custom::kNone;
};

Custom custom_kind(const std::string& re) {
  if (re == kKimiK2Trigger) return Custom::kKimiK2;
  if (re == kAfmoeDigits || re == kTinyAyaDigits) return Custom::kDigitGroups;
  return Custom::kNone;
}

}  // namespace

struct PreTokenizer::Impl {
  std::vector<Compiled> regexes;
  bool byte_encode = true;
  bool need_collapse = false;
  ~Impl() {
    for (auto& r : regexes) pcre2_code_free(r.code);
  }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes, bool byte_encode) : impl_(new Impl) {
  impl_->byte_encode = byte_encode;
  for (const std::string& re : regexes) {
    Compiled c;
    c.custom = custom_kind(re);
    if (c.custom != Custom::kNone) {
      impl_->regexes.push_back(c);
      continue;
    }
    c.collapsed = uses_categories(re);
    const std::string pattern = c.collapsed ? collapse_regex(re) : re;
    // ECMAScript semantics: `$` only at the very end; wide patterns are UTF.
    const uint32_t options = PCRE2_DOLLAR_ENDONLY | (c.collapsed ? 0u : PCRE2_UTF);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    c.code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &err, &err_off, nullptr);
    if (c.code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error("tokenizer: cannot compile pre-tokenizer regex '" + re + "': " + reinterpret_cast<char*>(msg));
    }
    pcre2_jit_compile(c.code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
    impl_->need_collapse = impl_->need_collapse || c.collapsed;
    impl_->regexes.push_back(c);
  }
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

namespace {

// Calls on_match(begin, end) for each successive match in subj[0, len), the way
// a regex iterator walks: after an empty match, try a non-empty one at the same
// place, else move on by one character.
template <typename F>
void for_each_match(const Compiled& re, const char* subj, size_t len, bool utf, pcre2_match_data* md, F on_match) {
  size_t pos = 0;
  uint32_t opts = 0;
  while (pos <= len) {
    int rc = pcre2_match(re.code, reinterpret_cast<PCRE2_SPTR>(subj), len, pos, opts | PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(re.code, reinterpret_cast<PCRE2_SPTR>(subj), len, pos, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       md, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (opts == 0) return;
      ++pos;  // the retry after an empty match failed: step one character
      while (utf && pos < len && (static_cast<uint8_t>(subj[pos]) & 0xC0) == 0x80) ++pos;
      opts = 0;
      continue;
    }
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("tokenizer: pre-tokenizer regex failed: ") + reinterpret_cast<char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    on_match(ov[0], ov[1]);
    pos = ov[1];
    opts = ov[1] == ov[0] ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
}

// Han characters as libllama's kimi-k2 splitter knows them: the CJK Unified
// Ideographs blocks (base, extensions A-F) and the compatibility ideographs.
bool is_han(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2EBEF) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// One piece c[0, n) of code points, cut the way libllama's hand-coded splitter
// of `kind` does; appends the (non-zero) lengths to `out`.
//  - kDigitGroups (afmoe, tiny_aya): each run of \p{N} becomes groups of three
//    counted from the right. The text before a run is NOT cut off: it joins
//    the first group ("ab1234" -> "ab1", "234"), as libllama does.
//  - kKimiK2: Moonshot's regex
//      [\p{Han}]+ | [^\r\n\p{L}\p{N}]?(letters but not Han)+('s|'t|...)? |
//      \p{N}{1,3} | ' '?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
//    walked left to right with the real Unicode categories (no collapsing,
//    and without the upper/lower-case split of the original regex).
void split_custom(Custom kind, const uint32_t* c, size_t n, std::vector<size_t>& out) {
  size_t prev = 0;
  auto add = [&](size_t end) {
    if (end > prev) out.push_back(end - prev);
    prev = end;
  };
  auto in = [&](size_t p) { return p < n; };
  auto letter = [&](size_t p) { return in(p) && category(c[p]) == CptCategory::kLetter; };
  auto number = [&](size_t p) { return in(p) && category(c[p]) == CptCategory::kNumber; };
  auto space = [&](size_t p) { return in(p) && c[p] <= 0x10FFFF && is_whitespace(c[p]); };

  if (kind == Custom::kDigitGroups) {
    size_t pos = 0;
    while (pos < n) {
      if (!number(pos)) {
        ++pos;
        continue;
      }
      const size_t first = pos;
      while (number(pos)) ++pos;
      size_t cur = first;
      if ((pos - first) % 3 != 0) {
        cur += (pos - first) % 3;
        add(cur);
      }
      while (cur < pos) {
        cur += 3;
        add(cur);
      }
    }
    add(n);
    return;
  }

  auto cpt_at = [&](size_t p) { return in(p) ? c[p] : 0xFFFFFFFFu; };
  auto word_letter = [&](size_t p) { return letter(p) && !is_han(c[p]); };
  auto other = [&](size_t p) { return in(p) && !space(p) && !letter(p) && !number(p); };
  size_t pos = 0;
  while (pos < n) {
    const uint32_t cpt = c[pos];
    if (is_han(cpt)) {
      while (in(pos) && is_han(c[pos])) ++pos;
      add(pos);
      continue;
    }
    const bool lead = !(cpt == '\r' || cpt == '\n' || letter(pos) || number(pos));
    if (word_letter(pos) || (lead && word_letter(pos + 1))) {
      if (lead) ++pos;
      bool any = false;
      while (word_letter(pos)) {
        any = true;
        ++pos;
      }
      if (any) {
        if (cpt_at(pos) == '\'' && pos + 1 < n) {
          const uint32_t a = to_lower(c[pos + 1]);
          if (a == 's' || a == 't' || a == 'm' || a == 'd') {
            pos += 2;
          } else if (pos + 2 < n) {
            const uint32_t b = to_lower(c[pos + 2]);
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) pos += 3;
          }
        }
        add(pos);
        continue;
      }
      if (lead) --pos;
    }
    if (number(pos)) {
      size_t ini = pos;
      while (number(pos)) {
        if (++pos - ini >= 3) {
          add(pos);
          ini = pos;
        }
      }
      add(pos);
      continue;
    }
    if (other(cpt == ' ' ? pos + 1 : pos)) {
      if (cpt == ' ') ++pos;
      while (other(pos)) ++pos;
      while (cpt_at(pos) == '\r' || cpt_at(pos) == '\n') ++pos;
      add(pos);
      continue;
    }
    size_t spaces = 0, last_newline_end = 0;
    while (space(pos + spaces)) {
      if (c[pos + spaces] == '\r' || c[pos + spaces] == '\n') last_newline_end = pos + spaces + 1;
      ++spaces;
    }
    if (last_newline_end > 0) {
      pos = last_newline_end;
    } else if (spaces > 1 && in(pos + spaces)) {
      pos += spaces - 1;
    } else if (spaces > 0) {
      pos += spaces;
    } else {
      ++pos;
    }
    add(pos);
  }
}

}  // namespace

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  const std::vector<uint32_t> cpts = decode_utf8_lenient(text);
  std::string collapsed;
  if (impl_->need_collapse) {
    collapsed.resize(cpts.size());
    for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = static_cast<char>(collapsed_class(cpts[i]));
  }

  pcre2_match_data* md = pcre2_match_data_create(32, nullptr);
  if (md == nullptr) throw Error("tokenizer: out of memory (pcre2 match data)");
  std::vector<size_t> pieces = {cpts.size()};  // lengths in code points
  std::vector<size_t> next;
  std::string wide;          // UTF-8 of one piece for the non-collapsed regexes
  std::vector<uint32_t> at;  // byte offset in `wide` -> code point index
  try {
    for (const Compiled& re : impl_->regexes) {
      next.clear();
      size_t start = 0;
      for (const size_t len : pieces) {
        size_t last = 0;  // in code points, relative to start
        auto emit = [&](size_t b, size_t e) {
          if (b > last) next.push_back(b - last);
          if (e > b) next.push_back(e - b);
          last = e;
        };
        if (re.custom != Custom::kNone) {
          split_custom(re.custom, cpts.data() + start, len, next);
          last = len;
        } else if (re.collapsed) {
          for_each_match(re, collapsed.data() + start, len, false, md, emit);
        } else {
          wide.clear();
          at.assign(1, 0);
          for (size_t i = start; i < start + len; ++i) {
            uint32_t c = cpts[i];
            if (c > 0x7F && is_whitespace(c)) c = 0x0B;
            if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFF;  // no pattern names these
            append_utf8(wide, c);
            at.resize(wide.size() + 1, 0);
            at[wide.size()] = static_cast<uint32_t>(i - start + 1);
          }
          for_each_match(re, wide.data(), wide.size(), true, md, [&](size_t b, size_t e) { emit(at[b], at[e]); });
        }
        if (last < len) next.push_back(len - last);
        start += len;
      }
      pieces.swap(next);
    }
  } catch (...) {
    pcre2_match_data_free(md);
    throw;
  }
  pcre2_match_data_free(md);

  std::vector<std::string> words;
  words.reserve(pieces.size());
  size_t start = 0;
  std::string utf8;
  for (const size_t len : pieces) {
    utf8.clear();
    for (size_t i = start; i < start + len; ++i) append_utf8(utf8, cpts[i]);
    start += len;
    if (!impl_->byte_encode) {
      words.push_back(utf8);
      continue;
    }
    std::string enc;
    enc.reserve(utf8.size() * 2);
    for (const char ch : utf8) enc += byte_to_unicode(static_cast<uint8_t>(ch));
    words.push_back(std::move(enc));
  }
  return words;
}

}  // namespace strix::tok
