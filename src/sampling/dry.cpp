// DRY ("don't repeat yourself", p-e-w; libllama's port of koboldcpp's
// implementation): penalizes the token that would extend a sequence already
// seen in the last N tokens, by multiplier * base^(length - allowed_length),
// where sequence breakers (e.g. "\n") cut the look-back.
//
// Breaker strings become token sequences as libllama makes them: every token
// whose text (detokenized alone, special tokens rendered) contains the breaker
// is a one-token breaker; a token whose text ends with a prefix of the breaker
// heads a sequence whose tail is the tokenization of the rest of the breaker
// (at most 20 tokens). Breakers are cut to 40 bytes.
#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "sampling/stages.h"
#include "sampling/token_ring.h"
#include "tokenizer/tokenizer.h"

namespace strix::sampling {

namespace {

constexpr size_t kMaxBreakerBytes = 40;
constexpr size_t kMaxTailTokens = 20;

using BreakerMap = std::unordered_map<int32_t, std::vector<std::vector<int32_t>>>;  // head -> tails

void add_tail(BreakerMap& map, int32_t head, std::vector<int32_t> tail) {
  auto& tails = map[head];
  if (std::find(tails.begin(), tails.end(), tail) == tails.end()) tails.push_back(std::move(tail));
}

// get_overlapping_token_sequences for all breakers at once (one detokenization
// per token instead of one per token and breaker; the set is the same).
BreakerMap process_breakers(const tok::Tokenizer& tokenizer, const std::vector<std::string>& breakers) {
  BreakerMap map;
  const int32_t n_tokens = tokenizer.vocab().n_tokens();
  for (int32_t id = 0; id < n_tokens; ++id) {
    const int32_t one[1] = {id};
    const std::string word = tokenizer.detokenize(one, /*remove_special=*/false, /*unparse_special=*/true);
    for (const std::string& str : breakers) {
      if (word.find(str) != std::string::npos) {
        add_tail(map, id, {});
        continue;
      }
      // Every place where the word ends with a prefix of the breaker.
      for (size_t pos = word.find(str[0]); pos != std::string::npos; pos = word.find(str[0], pos + 1)) {
        bool match = true;
        size_t i = 1;
        for (; i < str.size() && i + pos < word.size(); ++i) {
          if (word[pos + i] != str[i]) {
            match = false;
            break;
          }
        }
        if (!match) continue;
        std::vector<int32_t> tail = tokenizer.tokenize(str.substr(i), /*add_special=*/false, /*parse_special=*/false);
        if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
        add_tail(map, id, std::move(tail));
      }
    }
  }
  return map;
}

class Dry final : public Step {
 public:
  Dry(int32_t n_vocab, float multiplier, float base, int32_t allowed_length, int32_t penalty_last_n,
      BreakerMap breakers)
      : multiplier_(multiplier),
        base_(base),
        allowed_length_(allowed_length),
        breakers_(std::move(breakers)),
        max_repeat_(static_cast<size_t>(n_vocab), -1),
        last_tokens_(static_cast<size_t>(penalty_last_n)) {}

  const char* name() const override { return "dry"; }

  void accept(int32_t token) override { last_tokens_.push_back(token); }

  void reset() override {
    last_tokens_.clear();
    repeat_count_.clear();
    clear_max_repeat();
  }

  void apply(Candidates& cur) override {
    const int last_n_repeat = static_cast<int>(last_tokens_.size());
    if (last_n_repeat <= allowed_length_) return;
    repeat_count_.assign(static_cast<size_t>(last_n_repeat), 0);
    clear_max_repeat();

    // Step 1: the most recent complete breaker sequence limits how far back a
    // repetition may reach (rep_limit tokens).
    int rep_limit = last_n_repeat;
    for (int i = 0; i < last_n_repeat; ++i) {
      const auto it = breakers_.find(last_tokens_.rat(static_cast<size_t>(i)));
      if (it == breakers_.end()) continue;
      int longest_match = -1;
      for (const std::vector<int32_t>& tail : it->second) {
        const int seq_len = static_cast<int>(tail.size());
        if (seq_len > longest_match && seq_len <= i) {
          bool match = true;
          for (int offset = 0; offset < seq_len; ++offset) {
            if (tail[offset] != last_tokens_.rat(static_cast<size_t>(i - offset - 1))) {
              match = false;
              break;
            }
          }
          if (match) longest_match = seq_len;
        }
      }
      if (longest_match >= 0) {
        rep_limit = i - longest_match;
        break;
      }
    }
    if (rep_limit < allowed_length_) return;

    // Step 2: Z-algorithm run backwards: repeat_count_[last - k] = length of the
    // longest suffix of the context that also ends k tokens earlier.
    {
      const int last = last_n_repeat - 1;
      int rt = 0;
      int lt = 0;
      for (int k = 1; k < last_n_repeat; ++k) {
        if (k > rt) {
          int n = 0;
          while (n + k < last_n_repeat && rat(n) == rat(n + k)) ++n;
          repeat_count_[last - k] = std::min(n, rep_limit);
          if (n > 0) {
            lt = k;
            rt = k + n - 1;
          }
        } else {
          const int p = k - lt;
          const int right_part_len = rt - k + 1;
          if (repeat_count_[last - p] < right_part_len) {
            repeat_count_[last - k] = std::min(repeat_count_[last - p], rep_limit);
          } else {
            int i = rt + 1;
            while (i < last_n_repeat && rat(i) == rat(i - k)) i += 1;
            repeat_count_[last - k] = std::min(i - k, rep_limit);
            lt = k;
            rt = i - 1;
          }
        }
      }
    }

    // Step 3: the token following each repeat would extend it; keep the longest
    // repeat per such token.
    for (int i = 0; i < last_n_repeat - 1; ++i) {
      const int repeat_len = repeat_count_[i];
      if (repeat_len >= allowed_length_) {
        const int32_t token = rat(last_n_repeat - 2 - i);
        if (token < 0 || static_cast<size_t>(token) >= max_repeat_.size()) continue;
        if (max_repeat_[token] < repeat_len) {
          if (max_repeat_[token] < 0) touched_.push_back(token);
          max_repeat_[token] = repeat_len;
        }
      }
    }
    if (touched_.empty()) {
      cur.sorted = false;
      return;
    }

    // Step 4: penalties, the exponent clamped so that base^exp stays finite in float.
    constexpr float kFloatMaxLog = 88.7228391f;
    int max_exponent = 0;
    if (base_ > 1.000001f) max_exponent = static_cast<int>(kFloatMaxLog / std::log(base_));
    for (size_t i = 0; i < cur.size; ++i) {
      const int32_t id = cur.data[i].id;
      if (id < 0 || static_cast<size_t>(id) >= max_repeat_.size() || max_repeat_[id] < 0) continue;
      // A one-token breaker is never penalized.
      bool single_token_breaker = false;
      const auto it = breakers_.find(id);
      if (it != breakers_.end()) {
        for (const std::vector<int32_t>& tail : it->second) {
          if (tail.empty()) {
            single_token_breaker = true;
            break;
          }
        }
      }
      if (single_token_breaker) continue;
      int repeat_exp = max_repeat_[id] - allowed_length_;
      if (max_exponent > 0 && repeat_exp > max_exponent) repeat_exp = max_exponent;
      // std::pow(float, int) is a double pow; the product is rounded to float.
      const float penalty = static_cast<float>(multiplier_ * std::pow(static_cast<double>(base_), repeat_exp));
      cur.data[i].logit -= penalty;
    }
    cur.sorted = false;
  }

 private:
  int32_t rat(int i) const { return last_tokens_.rat(static_cast<size_t>(i)); }
  void clear_max_repeat() {
    for (int32_t t : touched_) max_repeat_[t] = -1;
    touched_.clear();
  }

  float multiplier_;
  float base_;
  int32_t allowed_length_;
  BreakerMap breakers_;
  std::vector<int> repeat_count_;
  std::vector<int> max_repeat_;   // [n_vocab] longest repeat the token would extend; -1: none
  std::vector<int32_t> touched_;  // ids with max_repeat_ >= 0
  TokenRing last_tokens_;
};

}  // namespace

StepPtr make_dry(const tok::Tokenizer& tokenizer, float multiplier, float base, int32_t allowed_length,
                 int32_t penalty_last_n, const std::vector<std::string>& breakers) {
  class Disabled final : public Step {
   public:
    const char* name() const override { return "?dry"; }
    void apply(Candidates&) override {}
  };
  if (!(multiplier != 0.0f && base >= 1.0f && penalty_last_n > 0)) return std::make_unique<Disabled>();
  std::vector<std::string> cleaned;
  for (const std::string& b : breakers) {
    if (b.empty()) continue;  // libllama skips (and warns about) empty breakers
    cleaned.push_back(b.size() > kMaxBreakerBytes ? b.substr(0, kMaxBreakerBytes) : b);
  }
  BreakerMap map;
  if (!cleaned.empty()) map = process_breakers(tokenizer, cleaned);
  return std::make_unique<Dry>(tokenizer.vocab().n_tokens(), multiplier, base, allowed_length, penalty_last_n,
                               std::move(map));
}

}  // namespace strix::sampling
