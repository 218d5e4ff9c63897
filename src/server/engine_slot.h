// The engine's per-slot state (private to src/server/engine*.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "server/engine.h"

namespace strix::server {

struct Engine::Slot {
  int seq = 0;
  bool active = false;
  bool swapped = false;   // preempted: no KV blocks, waits to be resumed
  uint64_t admitted = 0;  // admission order: prefill goes oldest first, the youngest is preempted
  GenRequest req;
  std::shared_ptr<GenStream> out;
  Clock::time_point deadline = Clock::time_point::max();
  // Tokens to bring into the KV: the prompt, and after a preemption the
  // generated tokens that were decoded too. n_fed of them are in the cache.
  std::vector<int32_t> feed;
  size_t n_fed = 0;
  // What a recompute starts from: the prompt, or after a context shift the
  // cells it kept, which hold the first base_gen generated tokens.
  std::vector<int32_t> base;
  size_t base_gen = 0;
  bool truncated = false;  // the context filled: shifted, or ended by it
  int32_t n_cached = 0;    // prompt tokens attached from the prefix cache at admission
  // The tokens of this slot's last finished sequence (its cells at the end,
  // prompt then generated) and its cache salt, for --cache-reuse.
  std::vector<int32_t> prev;
  std::string prev_salt;
  int32_t next_token = -1;         // sampled but not yet decoded
  std::vector<int32_t> generated;  // sampled tokens (the last one may still be next_token)
  int32_t n_gen = 0;
  int32_t row = -1;  // batch index of this slot's logits in the current step
  std::unique_ptr<tok::StreamDetokenizer> detok;
  std::string text;       // generated text so far
  std::string stop_word;  // the stop string that ended it (for the final event)
  size_t sent = 0;        // bytes of `text` already pushed
  // n_probs > 0: each sampled token's probabilities, with the end of its text
  // in `text` once the detokenizer let that text out.
  struct PendingProbs {
    size_t end = 0;
    bool known = false;
    TokenLogprobs probs;
  };
  std::deque<PendingProbs> probs;

  bool prefilling() const { return active && !swapped && n_fed < feed.size(); }
  bool decoding() const { return active && !swapped && n_fed >= feed.size(); }
};

struct Engine::SlotView {
  bool processing = false;
  int32_t n_prompt = 0, n_cached = 0, n_decoded = 0, n_predict = -1, n_probs = 0;
  bool cache_prompt = true, swapped = false;
  std::string prompt;  // the prompt's text
  std::vector<std::string> stop;
};

}  // namespace strix::server
