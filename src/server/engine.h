// The server's one engine thread: it owns the Context (and so the model's
// compute) and runs continuous batching over -np slots, one KV sequence each.
// Every step gathers the next token of each decoding slot plus a chunk of
// pending prompt tokens (chunked prefill, at most n_batch tokens in all),
// decodes once, samples each slot that got logits and pushes the text to its
// GenStream. Requests beyond the free slots (or the free KV) wait in FIFO order;
// one pinned to a slot (GenRequest::id_slot, llama-server's) waits for that
// slot without holding up the requests queued behind it.
// The KV cache is paged and shared: -c bounds all slots together, not each.
//
// Prefix caching (src/kv/kv_cache.h): a request with cache_prompt attaches the
// cached full blocks of the longest equal prefix (same cache_salt) and computes
// only the rest; its own full blocks, generated tokens included, stay cached
// after it ends until their memory is needed, so a later turn of a chat reuses
// the previous one. A request whose prompt shares a block with a prompt still
// being prefilled waits until that prompt is computed, then shares its blocks,
// a partly filled last one included (copied by whichever writes it first): n
// identical prompts compute the prompt once.
//
// Context shift (Options::ctx_shift): a decoding slot whose next token would
// take the last cell of n_ctx first drops cells after its first n_keep, as
// llama-server does, and the cells it keeps are what a preemption recomputes.
//
// Memory: when a decoding slot needs a block and none is free, the youngest
// running request is preempted (its blocks released, cached ones stay
// evictable) and resumed later by recomputing its prompt and generated tokens
// (mostly attached from the cache again); its stream sees nothing of this.
// Queued requests and preempted ones wait while the cache is short. A request
// ends at once, its blocks released, when its stream is cancelled (a client
// that went away) or its deadline passes (GenRequest::timeout_ms, else
// Options::timeout_s): Finish::kError with "cancelled" / "timed out ...".
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/batch_context.h"
#include "sampling/sampler.h"
#include "server/gen_stream.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

struct GenRequest {
  std::vector<int32_t> prompt;                 // non-empty, shorter than n_ctx
  std::unique_ptr<sampling::Sampler> sampler;  // built by the caller (bad parameters fail there)
  int32_t n_predict = -1;                      // < 0: until end of generation or a full context
  std::vector<std::string> stop;               // stop strings (not included in the output)
  int32_t n_probs = 0;                         // > 0: GenEvent::probs carries this many alternatives per token
  bool cache_prompt = true;                    // reuse cached KV blocks of an equal prompt prefix
  std::string cache_salt;                      // prefixes are shared only between requests of equal salt
  int64_t timeout_ms = 0;                      // > 0: ends with Finish::kError this long after submit()
  int32_t id_slot = -1;                        // >= 0: runs in this slot only, waiting while it is busy
  // Context shift (Options::ctx_shift): cells kept at the start (-1: the whole
  // prompt; one more for a BOS, as llama-server counts; unset: Options::n_keep)
  // and cells dropped per shift (0: half of what follows the kept ones).
  std::optional<int32_t> n_keep;
  int32_t n_discard = 0;
};

class Engine {
 public:
  struct Options {
    int n_parallel = 1;
    int32_t n_batch = 2048;  // most tokens per step (the Context splits it in n_ubatch passes)
    double timeout_s = 0;    // > 0: deadline of requests that set no timeout_ms (queue time included)
    // llama-server's --cache-reuse: > 0, a new request on a slot also reuses
    // chunks of at least this many tokens of the slot's last sequence that
    // match its prompt after the common prefix, moved to their new positions
    // (Context::seq_cut); 0: the exact prefix cache only.
    int32_t n_cache_reuse = 0;
    // llama-server's --context-shift: a slot whose sequence fills n_ctx drops
    // GenRequest::n_discard cells after the first n_keep (Context::seq_cut)
    // and goes on generating; off: it ends with Finish::kLimit (truncated).
    bool ctx_shift = false;
    int32_t n_keep = 0;  // --keep: GenRequest::n_keep when a request sets none
  };
  // ctx must have n_seq_max >= n_parallel; both must outlive the Engine.
  Engine(BatchContext& ctx, const tok::Tokenizer& tk, const Options& opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; thread-safe. Events arrive on the returned stream.
  // An id_slot outside [-1, n_parallel) is an ApiError (400 naming id_slot).
  std::shared_ptr<GenStream> submit(GenRequest req);
  // Queues several requests at once (n choices of one prompt): the engine sees
  // all of them or none, so they are admitted in the same step while they fit.
  std::vector<std::shared_ptr<GenStream>> submit_all(std::vector<GenRequest> reqs);
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

  // Counters and the KV cache's state as of the last engine step; thread-safe.
  struct Metrics {
    uint64_t prompt_tokens = 0;     // prompt tokens computed (cached ones excluded)
    uint64_t predicted_tokens = 0;  // tokens sampled
    double prompt_seconds = 0;      // step time spent on prompt tokens (a mixed step is split by token count)
    double predicted_seconds = 0;
    uint64_t prefix_hit_tokens = 0;  // prompt tokens served from the prefix cache
    uint64_t requests_done = 0;
    uint64_t preemptions = 0;
    uint64_t timeouts = 0;
    uint64_t cancelled = 0;
    int processing = 0;  // requests in a slot (preempted ones included)
    int deferred = 0;    // requests waiting: queued, or preempted and not yet resumed
    int64_t kv_blocks_total = 0, kv_blocks_used = 0, kv_blocks_cached = 0, kv_blocks_empty = 0;
    int64_t kv_tokens = 0;  // cells held by the running sequences
    int block_size = 0;
  };
  Metrics metrics();
  // Prometheus text in the shape of llama-server's /metrics (llamacpp:*) plus strix:* block gauges.
  std::string metrics_text();
  // llama-server's /slots: one object per slot.
  nlohmann::json slots_json();
  // The engine's part of llama-server's /props: n_ctx, total_slots, default_generation_settings.
  nlohmann::json props_json();

 private:
  struct Slot;
  struct SlotView;  // what slots_json shows, copied under mu_
  using Clock = std::chrono::steady_clock;
  struct Pending {
    GenRequest req;
    std::shared_ptr<GenStream> out;
    Clock::time_point deadline;
  };
  void loop();
  void admit();
  Slot* free_slot_for(const GenRequest& req);
  bool resume(Slot& s, int64_t reserved, bool alone);
  int32_t reuse_chunks(Slot& s, int32_t most);
  bool shift_context(Slot& s, const std::vector<Slot*>& running);
  bool step();
  void expire();
  void preempt(Slot& s);
  void sample(Slot& s);
  void feed_text(Slot& s, bool final);
  void finish(Slot& s, Finish why, const std::string& error = {});
  int64_t blocks_for(int32_t len) const;
  int64_t reserved_blocks(const Slot* except) const;
  bool others_running(const Slot* except) const;
  bool shares_inflight(const GenRequest& req) const;
  void publish();  // copies metrics and slot views under mu_

  BatchContext& ctx_;
  const tok::Tokenizer& tk_;
  Options opts_;
  std::vector<std::unique_ptr<Slot>> slots_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  int processing_ = 0;           // under mu_
  uint64_t cancelled_ = 0;       // under mu_
  Metrics metrics_;              // under mu_ (counters updated by the engine thread)
  std::vector<SlotView> views_;  // under mu_
  uint64_t admitted_ = 0;        // engine thread only
  std::thread thread_;
};

}  // namespace strix::server
