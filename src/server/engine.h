// The server's one engine thread: it owns the Context (and so the model's
// compute) and runs continuous batching over -np slots, one KV sequence each.
// Every step gathers the next token of each decoding slot plus a chunk of
// pending prompt tokens (chunked prefill, at most n_batch tokens in all),
// decodes once, samples each slot that got logits and pushes the text to its
// GenStream. Requests beyond the free slots (or the free KV) wait in FIFO order.
// The KV cache is paged and shared: -c bounds all slots together, not each.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "sampling/sampler.h"
#include "server/gen_stream.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

struct GenRequest {
  std::vector<int32_t> prompt;                 // non-empty, shorter than n_ctx
  std::unique_ptr<sampling::Sampler> sampler;  // built by the caller (bad parameters fail there)
  int32_t n_predict = -1;                      // < 0: until end of generation or a full context
  std::vector<std::string> stop;               // stop strings (not included in the output)
};

class Engine {
 public:
  struct Options {
    int n_parallel = 1;
    int32_t n_batch = 2048;  // most tokens per step (the Context splits it in n_ubatch passes)
  };
  // ctx must have n_seq_max >= n_parallel; both must outlive the Engine.
  Engine(Context& ctx, const tok::Tokenizer& tk, const Options& opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; thread-safe. Events arrive on the returned stream.
  std::shared_ptr<GenStream> submit(GenRequest req);
  // Finishes the running step, ends every request (Finish::kError) and joins the thread.
  void stop();

  int n_parallel() const { return opts_.n_parallel; }

  // For /health: slots busy, requests waiting, and requests cancelled by their client so far.
  struct Stats {
    int processing = 0;
    int queued = 0;
    uint64_t cancelled = 0;
  };
  Stats stats();

 private:
  struct Slot;
  struct Pending {
    GenRequest req;
    std::shared_ptr<GenStream> out;
  };
  void loop();
  void admit();
  bool step();
  void feed_text(Slot& s, bool final);
  void finish(Slot& s, Finish why, const std::string& error = {});
  int64_t blocks_for(int32_t len) const;

  Context& ctx_;
  const tok::Tokenizer& tk_;
  Options opts_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  int processing_ = 0;      // under mu_
  uint64_t cancelled_ = 0;  // under mu_
  uint64_t admitted_ = 0;   // engine thread only
  std::thread thread_;
};

}  // namespace strix::server
