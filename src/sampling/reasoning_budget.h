// The reasoning budget of llama.cpp's common_sampler (common_reasoning_budget_*
// in libllama-common of the pinned build): it watches the emitted tokens for a
// start tag of a thinking block ("<think>"), counts the tokens inside the
// block, and once the budget is spent forces the end tag ("</think>",
// optionally after a message) token by token by setting every other logit to
// -inf. A natural end tag before that ends the block without forcing.
//
//   ReasoningBudget rb(&tokenizer, {start}, {end}, forced, /*budget=*/16);
//   rb.apply(cur);      // before every other stage (a no-op unless forcing)
//   rb.accept(token);   // each generated token
//
// States, in libllama-common's enum order (common_reasoning_budget_state):
//   kIdle        watching for a start sequence
//   kCounting    inside the block, counting down, watching for an end sequence
//   kForcing     forcing forced[pos] at each apply(), pos advancing per accept()
//   kWaitingUtf8 budget spent mid-character: wait for a token that ends one
//   kDone        passthrough; a new start sequence re-arms the budget
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "sampling/candidates.h"

namespace strix::tok {
class Tokenizer;
}

namespace strix::sampling {

enum class BudgetState : int32_t { kIdle = 0, kCounting = 1, kForcing = 2, kWaitingUtf8 = 3, kDone = 4 };

using TokenSeq = std::vector<int32_t>;

// Several token sequences matched over a token stream at once (an Aho-Corasick
// automaton, as libllama-common's token_matcher): empty and repeated sequences
// are dropped; advance() reports the longest sequence that ends at this token
// and then starts over from nothing (matches do not overlap).
class TokenSeqMatcher {
 public:
  explicit TokenSeqMatcher(const std::vector<TokenSeq>& seqs);
  // Index into seqs() of the longest sequence ending here, or -1.
  int32_t advance(int32_t token);
  void reset() { state_ = 0; }
  const std::vector<TokenSeq>& seqs() const { return seqs_; }

 private:
  struct Node {
    std::map<int32_t, size_t> next;
    size_t fail = 0;
    int32_t seq = -1;  // the sequence that ends exactly here
  };
  size_t step(size_t state, int32_t token) const;

  std::vector<TokenSeq> seqs_;
  std::vector<Node> nodes_;
  std::vector<int32_t> longest_;  // per node: the longest sequence ending there (via failure links), or -1
  size_t state_ = 0;
};

// common_utf8_is_complete: whether a token's piece ends on a character
// boundary, judged from the piece alone (a piece of only continuation bytes
// counts as incomplete).
bool utf8_piece_complete(std::string_view piece);

class ReasoningBudget {
 public:
  // tokenizer: for the UTF-8 boundary check (pieces rendered with
  // special = false); may be null, then every token ends a character. A
  // budget <= 0 forces at once; initial kCounting with budget <= 0 starts in
  // kForcing, as common_reasoning_budget_init does.
  ReasoningBudget(const tok::Tokenizer* tokenizer, const std::vector<TokenSeq>& start_seqs,
                  const std::vector<TokenSeq>& end_seqs, TokenSeq forced, int32_t budget,
                  BudgetState initial = BudgetState::kIdle);

  void accept(int32_t token);
  // In kForcing: every candidate but the forced token gets logit -inf.
  void apply(Candidates& cur) const;
  // Back to kIdle with a full budget (common_reasoning_budget_reset).
  void reset();
  // common_reasoning_budget_force: from kCounting only, jump to kForcing.
  bool force();

  BudgetState state() const { return state_; }
  int32_t remaining() const { return remaining_; }
  // The end sequence that led to kDone (natural or inside the forced tokens),
  // or null; cleared when a start sequence re-arms.
  const TokenSeq* end_match() const;

 private:
  void start_block();
  void start_forcing();

  const tok::Tokenizer* tokenizer_;
  TokenSeqMatcher start_;
  TokenSeqMatcher end_;
  TokenSeq forced_;
  int32_t budget_;
  int32_t remaining_;
  BudgetState state_;
  size_t force_pos_ = 0;
  int32_t end_match_ = -1;
};

}  // namespace strix::sampling
