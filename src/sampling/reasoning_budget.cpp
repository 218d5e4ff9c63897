#include "sampling/reasoning_budget.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>

#include "tokenizer/tokenizer.h"

namespace strix::sampling {

TokenSeqMatcher::TokenSeqMatcher(const std::vector<TokenSeq>& seqs) {
  for (const TokenSeq& s : seqs) {
    if (!s.empty() && std::find(seqs_.begin(), seqs_.end(), s) == seqs_.end()) seqs_.push_back(s);
  }
  nodes_.emplace_back();  // the root: nothing matched
  for (size_t i = 0; i < seqs_.size(); ++i) {
    size_t at = 0;
    for (int32_t t : seqs_[i]) {
      auto it = nodes_[at].next.find(t);
      if (it == nodes_[at].next.end()) {
        const size_t child = nodes_.size();
        nodes_[at].next.emplace(t, child);  // (before emplace_back: it may move the nodes)
        nodes_.emplace_back();
        at = child;
      } else {
        at = it->second;
      }
    }
    nodes_[at].seq = static_cast<int32_t>(i);
  }
  // Failure links breadth first: the longest proper suffix of a node's path
  // that is also a path from the root.
  std::vector<size_t> order;
  std::deque<size_t> queue{0};
  while (!queue.empty()) {
    const size_t u = queue.front();
    queue.pop_front();
    order.push_back(u);
    for (const auto& [t, v] : nodes_[u].next) {
      if (u != 0) {
        size_t f = nodes_[u].fail;
        while (f != 0 && nodes_[f].next.count(t) == 0) f = nodes_[f].fail;
        const auto it = nodes_[f].next.find(t);
        nodes_[v].fail = it != nodes_[f].next.end() && it->second != v ? it->second : 0;
      }
      queue.push_back(v);
    }
  }
  // A node's own sequence is the longest ending there; otherwise the longest
  // one ending at its failure node (shorter, already computed in BFS order).
  longest_.assign(nodes_.size(), -1);
  for (size_t u : order) {
    longest_[u] = nodes_[u].seq >= 0 ? nodes_[u].seq : (u != 0 ? longest_[nodes_[u].fail] : -1);
  }
}

size_t TokenSeqMatcher::step(size_t state, int32_t token) const {
  while (state != 0 && nodes_[state].next.count(token) == 0) state = nodes_[state].fail;
  const auto it = nodes_[state].next.find(token);
  return it != nodes_[state].next.end() ? it->second : 0;
}

int32_t TokenSeqMatcher::advance(int32_t token) {
  state_ = step(state_, token);
  const int32_t found = longest_[state_];
  if (found >= 0) state_ = 0;
  return found;
}

bool utf8_piece_complete(std::string_view piece) {
  if (piece.empty()) return true;
  const size_t n = std::min<size_t>(4, piece.size());
  // Walk back over continuation bytes to the last lead byte; the character is
  // complete when the bytes from it to the end are as many as it announces.
  for (size_t i = 1; i <= n; ++i) {
    const auto c = static_cast<unsigned char>(piece[piece.size() - i]);
    if ((c & 0xC0) != 0x80) {
      const size_t expected = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      return i >= expected;
    }
  }
  return false;
}

ReasoningBudget::ReasoningBudget(const tok::Tokenizer* tokenizer, const std::vector<TokenSeq>& start_seqs,
                                 const std::vector<TokenSeq>& end_seqs, TokenSeq forced, int32_t budget,
                                 BudgetState initial)
    : tokenizer_(tokenizer),
      start_(start_seqs),
      end_(end_seqs),
      forced_(std::move(forced)),
      budget_(budget),
      remaining_(budget),
      state_(initial == BudgetState::kCounting && budget <= 0 ? BudgetState::kForcing : initial) {}

void ReasoningBudget::start_block() {
  state_ = BudgetState::kCounting;
  remaining_ = budget_;
  if (remaining_ <= 0) {
    state_ = BudgetState::kForcing;
    force_pos_ = 0;
  }
}

void ReasoningBudget::start_forcing() {
  state_ = BudgetState::kForcing;
  force_pos_ = 0;
  end_.reset();
}

void ReasoningBudget::accept(int32_t token) {
  switch (state_) {
    case BudgetState::kIdle:
      if (start_.advance(token) >= 0) start_block();
      break;
    case BudgetState::kCounting:
    case BudgetState::kWaitingUtf8: {
      const int32_t match = end_.advance(token);
      if (match >= 0) {
        state_ = BudgetState::kDone;
        end_match_ = match;
        break;
      }
      // Forcing the end tag right after half of a multi-byte character would
      // leave invalid UTF-8 in the reply: finish the character first.
      const bool complete = tokenizer_ == nullptr || utf8_piece_complete(tokenizer_->token_to_piece(token, false));
      if (state_ == BudgetState::kWaitingUtf8) {
        if (complete) start_forcing();
      } else if (--remaining_ <= 0) {
        if (complete) {
          start_forcing();
        } else {
          state_ = BudgetState::kWaitingUtf8;
          end_.reset();
        }
      }
      break;
    }
    case BudgetState::kForcing: {
      // The forced tokens end with the end tag: track it so that end_match()
      // names it once the forcing is over.
      const int32_t match = end_.advance(token);
      if (++force_pos_ >= forced_.size()) {
        state_ = BudgetState::kDone;
        end_match_ = match;
      }
      break;
    }
    case BudgetState::kDone:
      // Some models open several thinking blocks in one reply: each gets a
      // fresh budget.
      if (start_.advance(token) >= 0) {
        end_.reset();
        end_match_ = -1;
        start_block();
      }
      break;
  }
}

void ReasoningBudget::apply(Candidates& cur) const {
  if (state_ != BudgetState::kForcing || force_pos_ >= forced_.size()) return;
  const int32_t keep = forced_[force_pos_];
  for (size_t i = 0; i < cur.size; ++i) {
    if (cur.data[i].id != keep) cur.data[i].logit = -INFINITY;
  }
}

void ReasoningBudget::reset() {
  state_ = BudgetState::kIdle;
  remaining_ = budget_;
  start_.reset();
  end_.reset();
  force_pos_ = 0;
  end_match_ = -1;
}

bool ReasoningBudget::force() {
  if (state_ != BudgetState::kCounting) return false;
  start_forcing();
  return true;
}

const TokenSeq* ReasoningBudget::end_match() const {
  return end_match_ >= 0 ? &end_.seqs()[static_cast<size_t>(end_match_)] : nullptr;
}

}  // namespace strix::sampling
