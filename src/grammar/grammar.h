// Grammar-constrained sampling, as libllama's grammar sampler does it
// (llama_sampler_init_grammar / _lazy_patterns): the matcher keeps llama.cpp's
// set of pushdown stacks, advances them code point by code point over each
// accepted token's piece (token_to_piece with special = true), carries an
// unfinished UTF-8 sequence from one token to the next, and masks candidates.
//
//   auto g = std::shared_ptr<const grammar::Grammar>(grammar::Grammar::parse(gbnf, "root", &tokenizer));
//   grammar::Matcher m(g, tokenizer);
//   m.apply(candidates, n);      // logit = -INFINITY for every id the grammar forbids
//   m.accept(token);             // after sampling; throws strix::Error if it was forbidden
//   m.is_complete();             // a stack is empty: end-of-generation allowed
//
// Semantics kept from libllama (they decide which ids are allowed):
//  - an end-of-generation token is allowed iff some stack is empty (the
//    grammar may end here); accepting one changes nothing;
//  - a token with an empty piece, or one starting with a NUL byte, is never allowed;
//    a piece is read up to its first NUL byte;
//  - a piece with invalid UTF-8 is never allowed; one ending in an unfinished
//    sequence is allowed iff some completion could match the next char element;
//  - at a token element (<[id]>, !<[id]>) the token id decides;
//  - lazy: until a trigger token is accepted or a trigger pattern is found in
//    the text generated so far, apply() allows everything and accept() only
//    buffers; a pattern "^...$" must match the whole buffer, any other pattern
//    may match anywhere (std::regex ECMAScript, as libllama); the grammar is
//    then fed the text from the pattern's first non-empty capture group (or
//    the match start), token by token, and the trigger token itself.
//
// Differences from libllama, by design: accept() of a token the grammar
// cannot take throws strix::Error and leaves the state as it was (libllama
// throws from inside its sampler, or aborts for an end-of-generation token).
// An empty grammar string is not a grammar here (Grammar::parse throws);
// libllama's sampler treats "" as "no grammar", so callers must too.
//
// Speed: the token pieces are decoded once into a code-point trie
// (TokenTable: build it once per tokenizer and share it between matchers);
// apply() walks the trie with the interned set of stacks, so a whole subtree
// of tokens is rejected at once; transitions between stack sets are memoized
// (by which char classes match), and so is apply()'s result per stack set,
// since generation keeps coming back to the same states (inside a string ...).
// An unfinished UTF-8 sequence carried over takes the slow path (libllama's
// per-candidate check, over the few tokens that start with a continuation byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/gbnf.h"

namespace strix::tok {
class Tokenizer;
}

namespace strix::grammar {

// llama_token_data.
struct TokenData {
  int32_t id;
  float logit;
  float p;
};

struct LazyOptions {
  bool lazy = false;
  std::vector<std::string> trigger_patterns;  // regexes (ECMAScript); invalid ones throw strix::Error
  std::vector<int32_t> trigger_tokens;
};

// Every token's piece, decoded to code points, in a trie; built once per
// tokenizer (cost: one pass over the vocabulary).
class TokenTable {
 public:
  explicit TokenTable(const tok::Tokenizer& tokenizer);
  ~TokenTable();
  TokenTable(const TokenTable&) = delete;
  TokenTable& operator=(const TokenTable&) = delete;
  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

class Matcher {
 public:
  Matcher(std::shared_ptr<const Grammar> grammar, const tok::Tokenizer& tokenizer, LazyOptions lazy = {});
  Matcher(std::shared_ptr<const Grammar> grammar, const tok::Tokenizer& tokenizer,
          std::shared_ptr<const TokenTable> table, LazyOptions lazy = {});
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Sets logit = -INFINITY for every candidate the grammar forbids (nothing
  // while a lazy grammar awaits its trigger). Ids must be in the vocabulary.
  void apply(TokenData* candidates, size_t n);
  // Same over a full row of logits indexed by token id.
  void apply(std::span<float> logits_by_token_id);
  // Advances the grammar over the token. Throws strix::Error (and leaves the
  // state unchanged) when the grammar does not allow it.
  void accept(int32_t token);
  // Some stack is empty: the text so far is a complete match, and an
  // end-of-generation token is allowed. True while a lazy grammar awaits its
  // trigger (nothing is constrained then).
  bool is_complete() const;
  bool awaiting_trigger() const;
  // Back to the start state (and awaiting the trigger again when lazy).
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strix::grammar
