// Byte-level BPE pre-tokenization: the regex lists libllama applies per
// `tokenizer.ggml.pre` name, and the splitter that runs them.
//
// How libllama runs these regexes (and so how we do, with PCRE2):
//  - the text is decoded leniently to code points (tokenizer/unicode.h);
//  - each regex of the list splits every piece the previous one left; the text
//    between two matches stays a piece of its own;
//  - a regex that names a category (\p{L} \p{N} \p{P} \p{M} \p{S} \p{Lu} ...)
//    runs on a "collapsed" byte string, one byte per code point: non-ASCII
//    letters all become 0xD2, numbers 0xD1, ... and \p{X} is rewritten to a
//    class of that byte plus the ASCII members. So \p{Lu} and \p{Ll} both mean
//    "any letter" outside ASCII (the gpt-4o/tekken upper/lower split only
//    works for ASCII), and non-ASCII whitespace is \s via 0x0B;
//  - a regex without categories runs on the code points themselves (non-ASCII
//    whitespace replaced by 0x0B), ECMAScript-style: `$` only at the very end;
//  - the pieces are re-encoded to UTF-8 and, for byte-level vocabularies,
//    mapped byte by byte through the GPT-2 byte table.
// libllama hand-codes the gpt-2 and llama3 regexes; they mean the same as the
// collapsed regex except on unassigned code points (the hand-coded version
// treats those as matching no class), which our corpus does not contain.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::tok {

// What a pre-tokenizer name implies besides its regexes (libllama's load()).
struct PreConfig {
  std::string name;                  // as given in tokenizer.ggml.pre ("" -> "default")
  std::vector<std::string> regexes;  // applied in order
  bool byte_encode = true;           // GPT-2 byte mapping of the pieces
  bool ignore_merges = false;        // a piece that is a whole token skips the merges
  bool clean_spaces = true;          // detokenize removes " ." " ," " 's" ...
  bool escape_whitespaces = false;   // ' ' -> U+2581 before BPE (gemma4)
  std::optional<bool> add_bos;       // default add_bos implied by the name
};

// Throws Refusal naming `name` when libllama's list has no such name or we do
// not implement it (whitespace: see docs/TOKENIZERS.md). kimi-k2, afmoe,
// tiny_aya and cohere2moe use hand-coded splitters in libllama; ours are in
// split_custom() (pretokenize.cpp).
PreConfig pre_config(const std::string& name);

class PreTokenizer {
 public:
  PreTokenizer(const std::vector<std::string>& regexes, bool byte_encode);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // The pieces of text (byte-encoded when byte_encode), in order.
  std::vector<std::string> split(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strix::tok
