// WordPiece (BERT) as libllama runs it: a BertNormalizer-like pass splits the
// text into words (whitespace ends a word; punctuation, ASCII symbols and CJK
// ideographs are words of their own; controls, NUL and U+FFFD are dropped;
// optional lowercase and accent stripping via the first code point of the
// canonical decomposition), then each word, prefixed with U+2581, is covered
// greedily by the longest vocabulary tokens; a word that cannot be covered
// becomes the unknown token.
#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strix::tok {

namespace {

bool is_cjk_ideograph(uint32_t c) {
  // libllama's list (note 0x2B920, not 0x2B820, as in the HF Rust code)
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::vector<std::string> wpm_words(std::string_view text, const Vocab& v) {
  std::vector<std::string> words(1);
  for (uint32_t cpt : decode_utf8_lenient(text)) {
    if (v.strip_accents) cpt = nfd_first(cpt);
    if (is_whitespace(cpt)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    const CptCategory cat = category(cpt);
    if (cpt == 0 || cpt == 0xFFFD || cat == CptCategory::kControl) continue;
    if (v.strip_accents && cat == CptCategory::kMark) continue;
    std::string s;
    append_utf8(s, v.lowercase ? to_lower(cpt) : cpt);
    if (cat == CptCategory::kPunctuation || (cpt < 0x7F && cat == CptCategory::kSymbol) || is_cjk_ideograph(cpt)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = s;
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void Tokenizer::tokenize_wpm(std::string_view text, std::vector<int32_t>& out) const {
  for (const std::string& word : wpm_words(text, vocab_)) {
    if (word.empty()) continue;
    const std::string w = "\xe2\x96\x81" + word;
    const size_t n = w.size();
    const size_t start = out.size();
    for (size_t i = 0; i < n; ++i) {
      bool found = false;
      for (size_t j = std::min(n, i + vocab_.max_token_len + 1); j > i; --j) {
        const int32_t id = vocab_.find(w.substr(i, j - i));
        if (id != kNoToken) {
          out.push_back(id);
          found = true;
          i = j - 1;
          break;
        }
      }
      if (!found) {
        out.resize(start);  // the whole word becomes [UNK]
        break;
      }
    }
    if (out.size() == start) out.push_back(vocab_.unk);
  }
}

}  // namespace strix::tok
