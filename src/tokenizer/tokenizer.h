// Text <-> token ids, token for token as libllama (the pinned v0.5.0 build)
// does it, for SPM ("llama") and byte-level BPE ("gpt2") vocabularies.
//
//   auto file = GgufFile::open(path);                    // vocab-only GGUFs work
//   tok::Tokenizer t(tok::Vocab::load(*file));
//   std::vector<int32_t> ids = t.tokenize("Hello", /*add_special=*/true, /*parse_special=*/false);
//   std::string piece = t.token_to_piece(ids[0], /*special=*/true);
//   std::string text = t.detokenize(ids, /*remove_special=*/false, /*unparse_special=*/false);
//
//   tok::StreamDetokenizer s(t);                          // never splits a UTF-8 character
//   for (int32_t id : ids) out += s.push(id);
//   out += s.flush();
//
// The steps, as in libllama:
//  1. special-token partition: control/unknown tokens (only with parse_special)
//     and user-defined tokens (always) are cut out of the raw text, longest
//     token text first, honouring lstrip/rstrip attributes;
//  2. each remaining text fragment is tokenized: SPM with score-ordered
//     merges and <0xNN> byte fallback (a space is prepended to a fragment
//     that starts the text or follows a special token when add_space_prefix,
//     spaces become U+2581); BPE with the pre-tokenizer regexes
//     (tokenizer/pretokenize.h) and rank-ordered merges per piece; WPM
//     (BERT): BertNormalizer-style words, then longest-match WordPiece;
//     UGM (T5): sentencepiece normalization, then the best-scoring
//     segmentation (Viterbi over a token trie); RWKV: greedy longest match
//     over the unescaped token bytes (tokenizer/rwkv.cpp);
//  3. add_special adds bos (when add_bos) and eos (when add_eos); for WPM
//     always [CLS] ... [SEP] (bos ... sep); for RWKV nothing, as libllama.
// Thread safety: a Tokenizer is immutable after construction; calls may run
// concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

namespace strix::tok {

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);
  // Opens a GGUF file (tensors are not needed) and loads its vocabulary.
  static Tokenizer from_file(const std::string& path);

  const Vocab& vocab() const { return vocab_; }

  struct UgmTables;  // implementation detail of ugm.cpp (tries, scores, charsmap)

  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // The text of one token. special=false renders control/unknown tokens as "".
  // lstrip drops one leading space (libllama's lstrip argument).
  std::string token_to_piece(int32_t token, bool special, bool lstrip = false) const;

  // Concatenated pieces; remove_special drops a leading bos / trailing eos when
  // the vocabulary adds them; the leading space SPM added is removed; BPE
  // vocabularies with clean_spaces tidy " ." " 's" etc. like libllama.
  std::string detokenize(std::span<const int32_t> tokens, bool remove_special, bool unparse_special) const;

 private:
  struct Fragment {
    int32_t token;  // kNoToken: raw text [offset, offset + length)
    size_t offset;
    size_t length;
  };
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  void tokenize_spm(std::string text, std::vector<int32_t>& out) const;
  void tokenize_bpe(std::string_view text, std::vector<int32_t>& out) const;
  void tokenize_wpm(std::string_view text, std::vector<int32_t>& out) const;
  void tokenize_ugm(std::string_view text, std::vector<int32_t>& out) const;
  void tokenize_rwkv(std::string_view text, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::unique_ptr<PreTokenizer> pre_;  // BPE only
  static std::shared_ptr<const UgmTables> build_ugm(const Vocab& vocab);
  std::shared_ptr<const UgmTables> ugm_;
  struct RwkvTrie;  // rwkv.cpp
  static std::shared_ptr<const RwkvTrie> build_rwkv(const Vocab& vocab);
  std::shared_ptr<const RwkvTrie> rwkv_;
};

// Turns a stream of token ids into text without ever emitting part of a UTF-8
// character: bytes of an incomplete sequence at the end are held back until
// the next token completes it (or flush() gives up and emits them). The text is
// the pieces joined (the first one without the SPM leading space), i.e.
// detokenize() without the clean_spaces pass, which would need lookahead.
class StreamDetokenizer {
 public:
  explicit StreamDetokenizer(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(tokenizer), special_(special) {}
  // Text that is complete after this token (possibly empty).
  std::string push(int32_t token);
  // Whatever is still held back (an unfinished or invalid sequence).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  bool special_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace strix::tok
