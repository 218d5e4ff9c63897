// The channel between one HTTP request and the engine thread: the engine
// pushes text pieces and a final event, the HTTP side takes them when it is
// told (notify runs on the engine thread and must only post work elsewhere).
// Cancelling (a client that went away) is seen by the engine at its next step:
// the request ends with a final Finish::kError "cancelled" event (queued or
// running) and its KV blocks go back to the pool at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace strix::server {

// Why a generation ended, as llama-server's stop_type names it.
enum class Finish { kNone, kEos, kLimit, kWord, kError };

// One generated token's log-probability and the most likely alternatives
// (OpenAI logprobs: log-softmax of the model's logits at that step).
struct TokenProb {
  int32_t id = 0;
  std::string piece;
  float logprob = 0.0f;
};
struct TokenLogprobs {
  TokenProb sampled;
  std::vector<TokenProb> top;  // GenRequest::n_probs entries, most likely first
};

struct GenEvent {
  std::string text;                  // newly completed text (possibly empty)
  std::vector<TokenLogprobs> probs;  // GenRequest::n_probs > 0: the tokens whose text completed in this event
  bool done = false;
  Finish finish = Finish::kNone;
  int32_t n_prompt = 0;  // set on the final event
  int32_t n_gen = 0;
  int32_t n_cached = 0;    // set on the final event: prompt tokens served from the prefix cache
  std::string error;       // Finish::kError
  std::string stop_word;   // Finish::kWord: the stop string that matched (the first listed on a tie)
  bool truncated = false;  // set on the final event: the context filled (shifted, or ended the generation)
};

class GenStream {
 public:
  void push(GenEvent e) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::move(e));
    }
    std::lock_guard<std::mutex> lock(notify_mu_);  // set_notify waits for a call in flight
    if (notify_) notify_();
  }
  std::vector<GenEvent> take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<GenEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
    events_.clear();
    return out;
  }
  // Once set_notify returns, the previous callback is not running and will not
  // run again, so it may refer to the caller's stack. A callback must not call
  // push or set_notify on this stream.
  void set_notify(std::function<void()> f) {
    std::lock_guard<std::mutex> lock(notify_mu_);
    notify_ = std::move(f);
  }
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::mutex mu_;  // events_
  std::deque<GenEvent> events_;
  std::mutex notify_mu_;  // notify_ and its calls
  std::function<void()> notify_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace strix::server
