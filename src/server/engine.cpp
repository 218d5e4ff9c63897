#include "server/engine.h"

#include <algorithm>
#include <exception>
#include <span>
#include <string_view>
#include <utility>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "server/api_error.h"
#include "server/engine_slot.h"
#include "server/token_probs.h"

namespace strix::server {

namespace {

GenEvent error_event(const std::string& message) {
  GenEvent e;
  e.done = true;
  e.finish = Finish::kError;
  e.error = message;
  return e;
}

}  // namespace

Engine::Engine(BatchContext& ctx, const tok::Tokenizer& tk, const Options& opts) : ctx_(ctx), tk_(tk), opts_(opts) {
  if (opts_.n_parallel <= 0) throw Error("--parallel must be at least 1");
  if (opts_.n_parallel > ctx_.kv().n_seq_max()) {
    throw Error("the context has " + std::to_string(ctx_.kv().n_seq_max()) + " sequences, --parallel asks for " +
                std::to_string(opts_.n_parallel));
  }
  if (opts_.timeout_s < 0) throw Error("the request timeout must not be negative");
  if (opts_.n_batch < opts_.n_parallel) opts_.n_batch = opts_.n_parallel;
  if (opts_.ctx_shift && !ctx_.can_cut()) {
    throw Refusal("--context-shift: this model's keys have no RoPE to shift, so its cached cells cannot move");
  }
  for (int i = 0; i < opts_.n_parallel; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->seq = i;
    ctx_.seq_truncate(i, 0);
  }
  views_.resize(slots_.size());
  publish();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

std::shared_ptr<GenStream> Engine::submit(GenRequest req) {
  std::vector<GenRequest> one;
  one.push_back(std::move(req));
  return submit_all(std::move(one)).front();
}

std::vector<std::shared_ptr<GenStream>> Engine::submit_all(std::vector<GenRequest> reqs) {
  for (const GenRequest& req : reqs) {
    if (req.id_slot < -1 || req.id_slot >= opts_.n_parallel) {
      // llama-server would wait forever (or, in later builds, wrap the id around); a clear error is more useful
      throw ApiError(400,
                     "'id_slot' is " + std::to_string(req.id_slot) + ", this server has " +
                         std::to_string(opts_.n_parallel) + " slot(s): 0 .. " + std::to_string(opts_.n_parallel - 1) +
                         ", or -1 for any",
                     "id_slot");
    }
  }
  std::vector<std::shared_ptr<GenStream>> outs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (GenRequest& req : reqs) {
      auto out = std::make_shared<GenStream>();
      outs.push_back(out);
      if (stopping_) {
        out->push(error_event("the server is shutting down"));
        continue;
      }
      Clock::time_point deadline = Clock::time_point::max();
      const double limit_s = req.timeout_ms > 0 ? req.timeout_ms / 1000.0 : opts_.timeout_s;
      if (limit_s > 0) {
        deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
      }
      queue_.push_back(Pending{std::move(req), out, deadline});
    }
  }
  cv_.notify_one();
  return outs;
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  for (auto& s : slots_) {
    if (s->active) finish(*s, Finish::kError, "the server is shutting down");
  }
  std::deque<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (Pending& p : left) p.out->push(error_event("the server is shutting down"));
  publish();
}

Engine::Stats Engine::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{processing_, static_cast<int>(queue_.size()), cancelled_};
}

int64_t Engine::blocks_for(int32_t len) const {
  const int bs = ctx_.kv().block_size();
  return (static_cast<int64_t>(len) + bs - 1) / bs;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        if (stopping_ || !queue_.empty()) return true;
        return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->active; });
      });
      if (stopping_) return;
    }
    expire();
    admit();
    step();
    publish();
  }
}

// Ends requests whose client went away or whose deadline passed, queued or running.
void Engine::expire() {
  const Clock::time_point now = Clock::now();
  std::deque<Pending> late, gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (it->out->cancelled()) {
        gone.push_back(std::move(*it));
        it = queue_.erase(it);
      } else if (it->deadline <= now) {
        late.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    cancelled_ += gone.size();
    metrics_.cancelled += gone.size();
    metrics_.timeouts += late.size();
  }
  for (Pending& p : gone) p.out->push(error_event("cancelled"));
  for (Pending& p : late) p.out->push(error_event("timed out while queued (request deadline passed)"));
  for (auto& s : slots_) {
    if (!s->active) continue;
    if (s->out->cancelled()) {
      finish(*s, Finish::kError, "cancelled");
    } else if (s->deadline <= now) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++metrics_.timeouts;
      }
      finish(*s, Finish::kError, "timed out (request deadline passed)");
    }
  }
}

// Blocks the prefilling slots still need for their feed, plus one per decoding
// slot (its next block), so that an admission does not cause a preemption at once.
int64_t Engine::reserved_blocks(const Slot* except) const {
  int64_t r = 0;
  for (const auto& o : slots_) {
    if (o.get() == except) continue;
    if (o->prefilling()) {
      r += blocks_for(static_cast<int32_t>(o->feed.size())) - blocks_for(ctx_.seq_len(o->seq));
      if (o->next_token >= 0) ++r;
    } else if (o->decoding()) {
      ++r;
    }
  }
  return r;
}

bool Engine::others_running(const Slot* except) const {
  return std::any_of(slots_.begin(), slots_.end(),
                     [&](const auto& o) { return o.get() != except && o->active && !o->swapped; });
}

// True when the request's prompt shares a full block with a prompt another
// slot is still prefilling that the cache does not hold yet: admitting it now
// would compute that block twice.
bool Engine::shares_inflight(const GenRequest& req) const {
  if (!req.cache_prompt) return false;
  const KvCache& kv = ctx_.kv();
  const int bs = kv.block_size();
  const uint64_t salt = KvCache::salt_hash(req.cache_salt);
  int32_t cached = -1;
  for (const auto& o : slots_) {
    if (!o->prefilling() || !kv.seq_caching(o->seq) || o->req.cache_salt != req.cache_salt) continue;
    const size_t n = std::min(o->feed.size(), req.prompt.size());
    const size_t common = static_cast<size_t>(
        std::mismatch(req.prompt.begin(), req.prompt.begin() + n, o->feed.begin()).first - req.prompt.begin());
    const int32_t full = static_cast<int32_t>(common / bs * bs);
    if (full == 0) continue;
    // the whole common part once that slot has computed it (admission then shares its partial block too)
    if (cached < 0) cached = kv.cached_prefix(req.prompt, salt);
    if (full > cached || common > static_cast<size_t>(ctx_.seq_len(o->seq))) return true;
  }
  return false;
}

// Attaches what the cache holds of the slot's feed and checks that the rest
// fits next to what the running slots still need; undone when it does not.
bool Engine::resume(Slot& s, int64_t reserved, bool alone) {
  KvCache& kv = ctx_.kv_cache();
  ctx_.seq_truncate(s.seq, 0);
  kv.seq_set_caching(s.seq, s.req.cache_prompt, KvCache::salt_hash(s.req.cache_salt));
  // A fresh prompt still decodes its last token for the logits.
  const int32_t most = static_cast<int32_t>(s.feed.size()) - (s.next_token < 0 ? 1 : 0);
  int32_t have = !s.swapped ? reuse_chunks(s, most) : 0;  // a new request, not a preempted one
  const bool reused = have > 0;
  if (!reused) {
    have = s.req.cache_prompt ? kv.attach_prefix(s.seq, s.feed) : 0;
    if (have > most) {
      have = most;
      ctx_.seq_truncate(s.seq, have);
    }
  }
  // A running request with the same prefix may hold more of it than the cache's
  // full blocks (n identical prompts: their partly filled last block too).
  if (s.req.cache_prompt && !reused) {
    const Slot* best = nullptr;
    int32_t best_n = have;
    for (const auto& o : slots_) {
      if (o.get() == &s || !o->active || o->swapped || !o->req.cache_prompt || o->req.cache_salt != s.req.cache_salt) {
        continue;
      }
      const size_t n = std::min({s.feed.size(), o->feed.size(), static_cast<size_t>(ctx_.seq_len(o->seq))});
      const int32_t common = std::min<int32_t>(
          most, static_cast<int32_t>(std::mismatch(s.feed.begin(), s.feed.begin() + n, o->feed.begin()).first -
                                     s.feed.begin()));
      if (common > best_n) {
        best = o.get();
        best_n = common;
      }
    }
    if (best != nullptr) {
      ctx_.seq_truncate(s.seq, 0);
      kv.share_prefix(best->seq, s.seq, best_n);
      have = best_n;
    }
  }
  const int32_t len = static_cast<int32_t>(s.feed.size());
  const int64_t need = kv.blocks_needed(s.seq, len + (s.next_token >= 0 ? 1 : 0));
  if (!alone && reserved + need > kv.n_free_blocks()) {
    ctx_.seq_truncate(s.seq, 0);
    return false;
  }
  s.n_fed = static_cast<size_t>(have);
  return true;
}

// llama-server's --cache-reuse on a fresh request: the whole blocks the cache
// still holds of the slot's last sequence are attached, and past the prefix it
// shares with the prompt, every run of at least n_cache_reuse tokens that
// matches the prompt's next tokens is moved there (Context::seq_cut: the cells
// in between dropped, the run's keys re-rotated); what follows the last run is
// dropped. Returns the prompt tokens in place (at most `most`), or 0 (nothing
// kept: the sequence is empty again) when no run moved, so the exact prefix
// cache decides alone.
int32_t Engine::reuse_chunks(Slot& s, int32_t most) {
  if (opts_.n_cache_reuse <= 0 || !s.req.cache_prompt || s.prev.empty() || s.prev_salt != s.req.cache_salt) return 0;
  KvCache& kv = ctx_.kv_cache();
  const int32_t got = kv.attach_prefix(s.seq, s.prev);
  std::vector<int32_t> cache(s.prev.begin(), s.prev.begin() + got);
  const std::vector<int32_t>& prompt = s.feed;
  int32_t head_p = 0;
  while (head_p < got && head_p < most && cache[static_cast<size_t>(head_p)] == prompt[static_cast<size_t>(head_p)]) {
    ++head_p;
  }
  int32_t head_c = head_p;
  bool moved = false;
  try {
    while (head_c < static_cast<int32_t>(cache.size()) && head_p < most) {
      int32_t n = 0;
      while (head_c + n < static_cast<int32_t>(cache.size()) && head_p + n < most &&
             cache[static_cast<size_t>(head_c + n)] == prompt[static_cast<size_t>(head_p + n)]) {
        ++n;
      }
      if (n >= opts_.n_cache_reuse) {
        ctx_.seq_cut(s.seq, head_p, head_c);
        cache.erase(cache.begin() + head_p, cache.begin() + head_c);
        head_p += n;
        head_c = head_p;
        moved = true;
      } else {
        ++head_c;
      }
    }
  } catch (const Error&) {  // no free block for a copy: the plain path decides
    moved = false;
  }
  ctx_.seq_truncate(s.seq, moved ? head_p : 0);
  if (!moved) kv.seq_set_caching(s.seq, true, KvCache::salt_hash(s.req.cache_salt));
  return moved ? head_p : 0;
}

// llama-server's context shift, before a decoding slot's next token would take
// the last cell of n_ctx: n_keep cells stay (the request's n_keep, -1 the whole
// prompt, one more for a BOS, at most n_ctx - 4), n_discard after them go
// (the request's, else half of the rest) and the cells after those move down
// (Context::seq_cut). What stays becomes the slot's recompute base. Returns
// false when the step must start over: a slot was preempted to free blocks for
// the cut, or this one ended.
bool Engine::shift_context(Slot& s, const std::vector<Slot*>& running) {
  const int32_t n_ctx = static_cast<int32_t>(ctx_.n_ctx());
  const int32_t len = ctx_.seq_len(s.seq);
  int32_t n_keep = s.req.n_keep.value_or(opts_.n_keep);
  if (n_keep < 0) n_keep = static_cast<int32_t>(s.req.prompt.size());
  if (tk_.vocab().add_bos) ++n_keep;
  n_keep = std::max(0, std::min(n_ctx - 4, n_keep));
  const int32_t n_left = len - n_keep;
  const int32_t n_discard = std::clamp(s.req.n_discard > 0 ? s.req.n_discard : n_left / 2, 0, std::max(0, n_left - 1));
  s.truncated = true;
  if (n_discard == 0) {
    finish(s, Finish::kLimit);
    return false;
  }
  try {
    ctx_.seq_cut(s.seq, n_keep, n_keep + n_discard);
  } catch (const Error& e) {
    // blocks the kept prompt shares with other requests are copied first: make room, or give up
    if (running.size() > 1) {
      preempt(*running.back());
    } else {
      finish(s, Finish::kError, e.what());
    }
    return false;
  }
  const size_t decoded = s.generated.size() - 1;  // next_token is the last generated
  s.base.insert(s.base.end(), s.generated.begin() + static_cast<std::ptrdiff_t>(s.base_gen),
                s.generated.begin() + static_cast<std::ptrdiff_t>(decoded));
  s.base.erase(s.base.begin() + n_keep, s.base.begin() + n_keep + n_discard);
  s.base_gen = decoded;
  s.feed = s.base;
  s.n_fed = s.feed.size();
  return true;
}

// The free slot a queued request may take: its own when pinned (id_slot), else the first free one.
Engine::Slot* Engine::free_slot_for(const GenRequest& req) {
  if (req.id_slot >= 0) {
    Slot* s = slots_[static_cast<size_t>(req.id_slot)].get();
    return s->active ? nullptr : s;
  }
  for (auto& s : slots_) {
    if (!s->active) return s.get();
  }
  return nullptr;
}

// Resumes preempted slots (oldest first), then moves queued requests into free
// slots in FIFO order while the KV cache can hold them. A request pinned to a
// busy slot is passed over (llama-server defers it) and keeps its place.
void Engine::admit() {
  std::vector<Slot*> waiting;
  for (auto& s : slots_) {
    if (s->active && s->swapped) waiting.push_back(s.get());
  }
  std::sort(waiting.begin(), waiting.end(), [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
  for (Slot* s : waiting) {
    if (!resume(*s, reserved_blocks(s), !others_running(s)))
      return;  // nothing new is admitted before the preempted are back
    s->swapped = false;
  }
  for (;;) {
    Slot* free_slot = nullptr;
    Pending p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto next = queue_.begin();
      for (; next != queue_.end(); ++next) {
        free_slot = free_slot_for(next->req);
        if (free_slot != nullptr) break;
      }
      if (next == queue_.end()) return;
      if (shares_inflight(next->req)) return;
      Slot& s = *free_slot;
      s.req = std::move(next->req);
      s.feed = s.req.prompt;
      s.next_token = -1;
      if (!resume(s, reserved_blocks(&s), !others_running(&s))) {
        next->req = std::move(s.req);
        s.feed.clear();
        return;
      }
      p.out = std::move(next->out);
      p.deadline = next->deadline;
      queue_.erase(next);
      ++processing_;
      metrics_.prefix_hit_tokens += s.n_fed;
    }
    Slot& s = *free_slot;
    s.active = true;
    s.swapped = false;
    s.base = s.req.prompt;
    s.base_gen = 0;
    s.truncated = false;
    s.admitted = ++admitted_;
    s.out = std::move(p.out);
    s.deadline = p.deadline;
    s.n_cached = static_cast<int32_t>(s.n_fed);
    s.generated.clear();
    s.n_gen = 0;
    s.text.clear();
    s.sent = 0;
    s.probs.clear();
    // The prompt goes into the sampler's history (penalties) but not its grammar, as llama-server does.
    for (int32_t t : s.req.prompt) s.req.sampler->accept(t, /*accept_grammar=*/false);
    // Generated text keeps the leading space of its first piece (llama-server's
    // token_to_piece concatenation): prime the detokenizer with the last prompt token.
    s.detok = std::make_unique<tok::StreamDetokenizer>(tk_);
    s.detok->push(s.req.prompt.back());
    s.detok->flush();
    {
      std::lock_guard<std::mutex> lock(mu_);
      SlotView& v = views_[s.seq];
      v = SlotView{};
      v.processing = true;
      v.n_prompt = static_cast<int32_t>(s.req.prompt.size());
      v.n_cached = s.n_cached;
      v.n_predict = s.req.n_predict;
      v.n_probs = s.req.n_probs;
      v.cache_prompt = s.req.cache_prompt;
      v.stop = s.req.stop;
    }
    std::string prompt_text = tk_.detokenize(s.req.prompt, /*remove_special=*/false, /*unparse_special=*/true);
    std::lock_guard<std::mutex> lock(mu_);
    views_[s.seq].prompt = std::move(prompt_text);
  }
}

// Frees a running slot's blocks; it is resumed by recomputing its prompt and
// the generated tokens already decoded (the one sampled last stays pending).
void Engine::preempt(Slot& s) {
  s.feed = s.base;
  const size_t decoded = s.generated.size() - (s.next_token >= 0 ? 1 : 0);
  s.feed.insert(s.feed.end(), s.generated.begin() + static_cast<std::ptrdiff_t>(s.base_gen),
                s.generated.begin() + static_cast<std::ptrdiff_t>(decoded));
  s.n_fed = 0;
  s.swapped = true;
  s.row = -1;
  ctx_.seq_truncate(s.seq, 0);
  std::lock_guard<std::mutex> lock(mu_);
  ++metrics_.preemptions;
}

// Pushes newly generated text, holding back a tail that could still become a
// stop string; a stop string ends the request (the text ends before it).
void Engine::feed_text(Slot& s, bool final) {
  size_t cut = std::string::npos;
  const std::string* matched = nullptr;
  for (const std::string& stop : s.req.stop) {
    if (stop.empty()) continue;
    const size_t at = s.text.find(stop, s.sent);
    if (at != std::string::npos && (cut == std::string::npos || at < cut)) {
      cut = at;
      matched = &stop;
    }
  }
  size_t upto = s.text.size();
  if (cut != std::string::npos) {
    upto = cut;
  } else if (!final) {
    size_t hold = 0;
    const std::string_view tail = std::string_view(s.text).substr(s.sent);
    for (const std::string& stop : s.req.stop) {
      if (stop.empty()) continue;
      for (size_t n = std::min(stop.size() - 1, tail.size()); n > hold; --n) {
        if (tail.substr(tail.size() - n) == std::string_view(stop).substr(0, n)) {
          hold = n;
          break;
        }
      }
    }
    upto -= hold;
  }
  GenEvent e;
  while (!s.probs.empty() && s.probs.front().known && s.probs.front().end <= upto) {
    e.probs.push_back(std::move(s.probs.front().probs));
    s.probs.pop_front();
  }
  if (upto > s.sent || !e.probs.empty()) {
    if (upto > s.sent) e.text = s.text.substr(s.sent, upto - s.sent);
    s.out->push(std::move(e));
    s.sent = std::max(s.sent, upto);
  }
  if (cut != std::string::npos) {
    s.text.resize(cut);
    s.stop_word = *matched;
    finish(s, Finish::kWord);
  }
}

void Engine::finish(Slot& s, Finish why, const std::string& error) {
  if (!s.active) return;
  s.active = false;  // feed_text below may find a stop string and call finish(kWord) first
  if (why == Finish::kEos || why == Finish::kLimit) {
    s.text += s.detok->flush();
    for (auto& p : s.probs) {
      if (!p.known) {
        p.known = true;
        p.end = s.text.size();
      }
    }
    s.active = true;
    feed_text(s, /*final=*/true);
    if (!s.active) return;  // ended on a stop string
    s.active = false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    --processing_;
    ++metrics_.requests_done;
    if (s.out->cancelled()) {
      ++cancelled_;
      ++metrics_.cancelled;
    }
    views_[s.seq] = SlotView{};
  }
  GenEvent e;
  e.done = true;
  e.finish = why;
  e.n_prompt = static_cast<int32_t>(s.req.prompt.size());
  e.n_gen = s.n_gen;
  e.n_cached = s.n_cached;
  e.error = error;
  if (why == Finish::kWord) e.stop_word = s.stop_word;
  e.truncated = s.truncated;
  s.out->push(std::move(e));
  s.stop_word.clear();
  // what the cache holds of this sequence, for a later --cache-reuse on this slot
  s.prev.clear();
  if (opts_.n_cache_reuse > 0 && s.req.cache_prompt) {
    s.prev = s.base;
    s.prev.insert(s.prev.end(), s.generated.begin() + static_cast<std::ptrdiff_t>(s.base_gen), s.generated.end());
    s.prev.resize(std::min(s.prev.size(), static_cast<size_t>(ctx_.seq_len(s.seq))));
    s.prev_salt = s.req.cache_salt;
  }
  ctx_.seq_truncate(s.seq, 0);  // the sequence's blocks go back to the pool (full ones stay cached)
  s.out.reset();
  s.req = GenRequest();
  s.feed.clear();
  s.base.clear();
  s.base_gen = 0;
  s.generated.clear();
  s.probs.clear();
  s.detok.reset();
  s.swapped = false;
  s.row = -1;
  s.next_token = -1;
}

// Samples the slot's next token from its logits row of the last decode.
void Engine::sample(Slot& s) {
  if (s.req.n_predict == 0) {
    finish(s, Finish::kLimit);
    return;
  }
  try {
    // the row itself only when probabilities are reported; else the sampler may
    // decide from the backend's largest logits (no copy of the row)
    const std::span<const float> logits = s.req.n_probs > 0 ? ctx_.logits(s.row) : std::span<const float>();
    const int32_t tok = s.req.n_probs > 0 ? s.req.sampler->sample(logits) : s.req.sampler->sample(ctx_, s.row);
    s.req.sampler->accept(tok);
    ++s.n_gen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++metrics_.predicted_tokens;
      views_[s.seq].n_decoded = s.n_gen;
    }
    if (tk_.vocab().is_eog(tok)) {
      finish(s, Finish::kEos);
      return;
    }
    s.generated.push_back(tok);
    const std::string piece = s.detok->push(tok);
    s.text += piece;
    if (s.req.n_probs > 0) {
      Slot::PendingProbs p;
      p.probs = token_logprobs(logits, tok, s.req.n_probs, tk_);
      // A token whose bytes the detokenizer holds back (an unfinished UTF-8
      // sequence) completes with the text of a later one.
      p.known = !piece.empty() || tk_.token_to_piece(tok, false).empty();
      p.end = s.text.size();
      if (!piece.empty()) {
        for (auto& q : s.probs) {
          if (!q.known) {
            q.known = true;
            q.end = s.text.size();
          }
        }
      }
      s.probs.push_back(std::move(p));
    }
    feed_text(s, /*final=*/false);
    if (!s.active) return;
    if (s.req.n_predict >= 0 && s.n_gen >= s.req.n_predict) {
      finish(s, Finish::kLimit);
    } else if (ctx_.seq_len(s.seq) >= ctx_.n_ctx()) {
      s.truncated = true;
      finish(s, Finish::kLimit);
    } else {
      s.next_token = tok;
    }
  } catch (const std::exception& e) {
    finish(s, Finish::kError, e.what());
  }
}

bool Engine::step() {
  std::vector<Slot*> order;
  for (auto& s : slots_) {
    if (s->active && !s->swapped) order.push_back(s.get());
  }
  if (order.empty()) return false;
  std::sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
  if (opts_.ctx_shift) {
    for (Slot* s : order) {
      if (s->decoding() && s->next_token >= 0 && ctx_.seq_len(s->seq) + 1 >= ctx_.n_ctx()) {
        if (!shift_context(*s, order)) return true;
      }
    }
  }

  std::vector<int32_t> tokens, pos, seq;
  std::vector<uint8_t> want;
  int64_t free_blocks = ctx_.kv().n_free_blocks();
  const int bs = ctx_.kv().block_size();
  // Decoding slots first: one token each keeps every stream moving.
  for (Slot* s : order) {
    s->row = -1;
    if (!s->decoding() || s->next_token < 0) continue;
    const int32_t len = ctx_.seq_len(s->seq);
    const int64_t need = ctx_.kv().blocks_needed(s->seq, len + 1);
    if (need > free_blocks) {
      // The shared cache is full: preempt the youngest running request, or
      // end this one ("length") when it runs alone.
      if (order.size() == 1) {
        s->truncated = true;
        finish(*s, Finish::kLimit);
      } else {
        preempt(*order.back());
      }
      return true;
    }
    free_blocks -= need;
    s->row = static_cast<int32_t>(tokens.size());
    tokens.push_back(s->next_token);
    pos.push_back(len);
    seq.push_back(s->seq);
    want.push_back(1);
  }
  const int64_t n_decode_tokens = static_cast<int64_t>(tokens.size());
  // Then prompt chunks, oldest request first, in what is left of the batch.
  int64_t budget = opts_.n_batch - static_cast<int64_t>(tokens.size());
  for (Slot* s : order) {
    if (!s->prefilling() || budget <= 0) continue;
    const int32_t len = ctx_.seq_len(s->seq);
    // a partly filled last block may be shared (an attached prefix): writing into it takes a copy
    const int64_t tail = len % bs != 0 ? bs - len % bs : 0;
    const int64_t copy = tail > 0 ? ctx_.kv().blocks_needed(s->seq, len + 1) : 0;
    const int64_t room = free_blocks < copy ? 0 : tail + (free_blocks - copy) * bs;
    const int64_t remaining = static_cast<int64_t>(s->feed.size() - s->n_fed);
    const int64_t chunk = std::min({remaining, budget, room});
    if (chunk <= 0) continue;
    for (int64_t i = 0; i < chunk; ++i) {
      tokens.push_back(s->feed[s->n_fed + i]);
      pos.push_back(len + static_cast<int32_t>(i));
      seq.push_back(s->seq);
      want.push_back(0);
    }
    // the prompt's last token gives the logits of the first sample (a resumed
    // request has its next token already)
    if (chunk == remaining && s->next_token < 0) {
      want.back() = 1;
      s->row = static_cast<int32_t>(tokens.size()) - 1;
    }
    free_blocks -= ctx_.kv().blocks_needed(s->seq, len + static_cast<int32_t>(chunk));
    budget -= chunk;
  }
  if (tokens.empty()) {
    // Only half-prefilled prompts that no longer fit: preempt the youngest, or
    // end it when it runs alone.
    if (order.size() == 1) {
      finish(*order.back(), Finish::kError, "the context is full (raise -c or lower --parallel)");
    } else {
      preempt(*order.back());
    }
    return true;
  }
  const Clock::time_point t0 = Clock::now();
  try {
    ctx_.decode(tokens, pos, seq, want);
  } catch (const std::exception& e) {
    for (Slot* s : order) finish(*s, Finish::kError, e.what());
    return true;
  }
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t n_prompt = static_cast<int64_t>(tokens.size()) - n_decode_tokens;
    metrics_.prompt_tokens += static_cast<uint64_t>(n_prompt);
    metrics_.prompt_seconds += dt * static_cast<double>(n_prompt) / static_cast<double>(tokens.size());
    metrics_.predicted_seconds += dt * static_cast<double>(n_decode_tokens) / static_cast<double>(tokens.size());
  }
  // Account for what was decoded, then sample every slot that got logits.
  for (Slot* s : order) {
    if (!s->active) continue;
    if (s->prefilling()) {
      s->n_fed = static_cast<size_t>(ctx_.seq_len(s->seq));
    } else if (s->row >= 0) {
      s->next_token = -1;
    }
    if (s->row >= 0) sample(*s);
  }
  return true;
}

}  // namespace strix::server
