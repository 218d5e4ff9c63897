// A tokenizer vocabulary read from GGUF metadata (tokenizer.* keys), with the
// defaults and per-token attribute fix-ups libllama applies at load time, so
// that tokenization and detokenization can match it token for token.
//
//   auto file = GgufFile::open(path);          // a vocab-only GGUF is enough
//   tok::Vocab v = tok::Vocab::load(*file);
//   v.type == tok::VocabType::kBpe; v.n_tokens(); v.bos; v.add_bos; ...
//
// Supported: tokenizer.ggml.model "llama" (SPM), "gpt2" (byte-level BPE),
// "gemma4" (BPE over raw UTF-8), "bert" (WordPiece), "t5" (Unigram) and
// "rwkv" (greedy byte trie, tokenizer/rwkv.cpp). Others (plamo2, hybriddna ...)
// are refused by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/pretokenize.h"

namespace strix::tok {

enum class VocabType { kSpm, kBpe, kWpm, kUgm, kRwkv };

// Token attributes (bit values as libllama's llama_token_attr).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrNormalized = 1u << 6,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
};

struct TokenInfo {
  std::string text;
  float score = 0.0f;
  uint32_t attr = kAttrNormal;
};

constexpr int32_t kNoToken = -1;

struct Vocab {
  VocabType type = VocabType::kSpm;
  std::string model;  // tokenizer.ggml.model
  PreConfig pre;      // BPE only: regexes and the flags implied by the name

  std::vector<TokenInfo> tokens;
  std::unordered_map<std::string, int32_t> ids;          // text -> id
  std::unordered_map<std::string, int32_t> merge_ranks;  // "left right" -> rank (BPE)

  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken, unk = kNoToken, sep = kNoToken,
          pad = kNoToken, mask = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken, fim_pad = kNoToken, fim_rep = kNoToken,
          fim_sep = kNoToken;
  std::vector<int32_t> eog;  // end-of-generation ids, ascending

  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;
  bool remove_extra_whitespaces = false;
  bool escape_whitespaces = true;  // SPM: ' ' -> U+2581
  bool clean_spaces = false;
  bool ignore_merges = false;
  // WordPiece (BertNormalizer) options and the longest token text in bytes
  bool lowercase = true;
  bool strip_accents = true;
  size_t max_token_len = 0;
  // Unigram (T5): sentencepiece's precompiled normalization map (may be empty)
  std::string precompiled_charsmap;
  bool treat_whitespace_as_suffix = false;

  // Tokens matched in raw text before tokenizing (control, user-defined,
  // unknown), longest text first: the order libllama partitions in.
  std::vector<int32_t> special_tokens;
  // token_to_piece(id, special = true) for every id.
  std::vector<std::string> pieces;

  static Vocab load(const GgufFile& file);

  int32_t n_tokens() const { return static_cast<int32_t>(tokens.size()); }
  int32_t find(const std::string& text) const {
    const auto it = ids.find(text);
    return it == ids.end() ? kNoToken : it->second;
  }
  // Rank of merging left+right, -1 when there is no such merge.
  int32_t merge_rank(const std::string& left, const std::string& right) const;
  // The byte-fallback token of a byte: <0xNN> (SPM) or its GPT-2 character (BPE).
  int32_t byte_token(uint8_t byte) const;
  bool is_eog(int32_t id) const;
};

// An RWKV token's bytes from its stored text (\t \n \r \xHH, \<c>; rwkv.cpp).
std::string unescape_rwkv_token(std::string_view escaped);

}  // namespace strix::tok
