#include "server/engine.h"

#include <algorithm>
#include <exception>
#include <span>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace strix::server {

struct Engine::Slot {
  int seq = 0;
  bool active = false;
  uint64_t admitted = 0;  // admission order: prefill goes oldest first
  GenRequest req;
  std::shared_ptr<GenStream> out;
  size_t n_fed = 0;         // prompt tokens decoded so far
  int32_t next_token = -1;  // sampled but not yet decoded
  int32_t n_gen = 0;
  int32_t row = -1;  // batch index of this slot's logits in the current step
  std::unique_ptr<tok::StreamDetokenizer> detok;
  std::string text;  // generated text so far
  size_t sent = 0;   // bytes of `text` already pushed

  bool prefilling() const { return active && n_fed < req.prompt.size(); }
};

Engine::Engine(Context& ctx, const tok::Tokenizer& tk, const Options& opts) : ctx_(ctx), tk_(tk), opts_(opts) {
  if (opts_.n_parallel <= 0) throw Error("--parallel must be at least 1");
  if (opts_.n_parallel > ctx_.kv().n_seq_max()) {
    throw Error("the context has " + std::to_string(ctx_.kv().n_seq_max()) + " sequences, --parallel asks for " +
                std::to_string(opts_.n_parallel));
  }
  if (opts_.n_batch < opts_.n_parallel) opts_.n_batch = opts_.n_parallel;
  for (int i = 0; i < opts_.n_parallel; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->seq = i;
    ctx_.seq_truncate(i, 0);
  }
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

std::shared_ptr<GenStream> Engine::submit(GenRequest req) {
  auto out = std::make_shared<GenStream>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      GenEvent e;
      e.done = true;
      e.finish = Finish::kError;
      e.error = "the server is shutting down";
      out->push(std::move(e));
      return out;
    }
    queue_.push_back(Pending{std::move(req), out});
  }
  cv_.notify_one();
  return out;
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
  for (Pending& p : left) {
    GenEvent e;
    e.done = true;
    e.finish = Finish::kError;
    e.error = "the server is shutting down";
    p.out->push(std::move(e));
  }
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
    admit();
    step();
  }
}

// Moves queued requests into free slots, oldest first, while the KV cache can
// hold their whole prompts next to the prompts still being prefilled (so two
// half-prefilled prompts never wait on each other's blocks).
void Engine::admit() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ += std::erase_if(queue_, [](const Pending& p) { return p.out->cancelled(); });
  while (!queue_.empty()) {
    Slot* free_slot = nullptr;
    bool any_active = false;
    int64_t reserved = 0;
    for (auto& s : slots_) {
      if (!s->active) {
        if (free_slot == nullptr) free_slot = s.get();
        continue;
      }
      any_active = true;
      if (s->prefilling()) {
        reserved += blocks_for(static_cast<int32_t>(s->req.prompt.size())) - blocks_for(ctx_.seq_len(s->seq));
      }
    }
    if (free_slot == nullptr) return;
    Pending& p = queue_.front();
    const int64_t need = blocks_for(static_cast<int32_t>(p.req.prompt.size()));
    if (any_active && reserved + need > ctx_.kv().n_free_blocks()) return;
    Slot& s = *free_slot;
    s.active = true;
    s.admitted = ++admitted_;
    ++processing_;
    s.req = std::move(p.req);
    s.out = std::move(p.out);
    queue_.pop_front();
    s.n_fed = 0;
    s.next_token = -1;
    s.n_gen = 0;
    s.text.clear();
    s.sent = 0;
    ctx_.seq_truncate(s.seq, 0);
    // The prompt goes into the sampler's history (penalties) but not its grammar, as llama-server does.
    for (int32_t t : s.req.prompt) s.req.sampler->accept(t, /*accept_grammar=*/false);
    // Generated text keeps the leading space of its first piece (llama-server's
    // token_to_piece concatenation): prime the detokenizer with the last prompt token.
    s.detok = std::make_unique<tok::StreamDetokenizer>(tk_);
    s.detok->push(s.req.prompt.back());
    s.detok->flush();
  }
}

// Pushes newly generated text, holding back a tail that could still become a
// stop string. True when a stop string was found (the text ends before it).
void Engine::feed_text(Slot& s, bool final) {
  size_t cut = std::string::npos;
  for (const std::string& stop : s.req.stop) {
    if (stop.empty()) continue;
    const size_t at = s.text.find(stop, s.sent);
    if (at != std::string::npos && (cut == std::string::npos || at < cut)) cut = at;
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
  if (upto > s.sent) {
    GenEvent e;
    e.text = s.text.substr(s.sent, upto - s.sent);
    s.out->push(std::move(e));
    s.sent = upto;
  }
  if (cut != std::string::npos) {
    s.text.resize(cut);
    finish(s, Finish::kWord);
  }
}

void Engine::finish(Slot& s, Finish why, const std::string& error) {
  if (!s.active) return;
  s.active = false;  // feed_text below may find a stop string and call finish(kWord) first
  if (why == Finish::kEos || why == Finish::kLimit) {
    s.text += s.detok->flush();
    s.active = true;
    feed_text(s, /*final=*/true);
    if (!s.active) return;  // ended on a stop string
    s.active = false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    --processing_;
    if (s.out->cancelled()) ++cancelled_;
  }
  GenEvent e;
  e.done = true;
  e.finish = why;
  e.n_prompt = static_cast<int32_t>(s.req.prompt.size());
  e.n_gen = s.n_gen;
  e.error = error;
  s.out->push(std::move(e));
  ctx_.seq_truncate(s.seq, 0);  // the sequence's blocks go back to the pool
  s.out.reset();
  s.req = GenRequest();
  s.detok.reset();
  s.row = -1;
}

bool Engine::step() {
  for (auto& s : slots_) {
    if (s->active && s->out->cancelled()) finish(*s, Finish::kError, "cancelled");
  }
  std::vector<Slot*> order;
  for (auto& s : slots_) {
    if (s->active) order.push_back(s.get());
  }
  if (order.empty()) return false;
  std::sort(order.begin(), order.end(), [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });

  std::vector<int32_t> tokens, pos, seq;
  std::vector<uint8_t> want;
  int64_t free_blocks = ctx_.kv().n_free_blocks();
  const int bs = ctx_.kv().block_size();
  // Decoding slots first: one token each keeps every stream moving.
  for (Slot* s : order) {
    s->row = -1;
    if (s->next_token < 0) continue;
    const int32_t len = ctx_.seq_len(s->seq);
    const int64_t need = blocks_for(len + 1) - blocks_for(len);
    if (need > free_blocks) {
      // The shared cache is full: end the longest sequence ("length"), freeing its blocks.
      Slot* longest = s;
      for (Slot* o : order) {
        if (o->active && ctx_.seq_len(o->seq) > ctx_.seq_len(longest->seq)) longest = o;
      }
      finish(*longest, Finish::kLimit);
      return true;
    }
    free_blocks -= need;
    s->row = static_cast<int32_t>(tokens.size());
    tokens.push_back(s->next_token);
    pos.push_back(len);
    seq.push_back(s->seq);
    want.push_back(1);
  }
  // Then prompt chunks, oldest request first, in what is left of the batch.
  int64_t budget = opts_.n_batch - static_cast<int64_t>(tokens.size());
  for (Slot* s : order) {
    if (!s->prefilling() || budget <= 0) continue;
    const int32_t len = ctx_.seq_len(s->seq);
    const int64_t room = (blocks_for(len) * bs - len) + free_blocks * bs;
    const int64_t remaining = static_cast<int64_t>(s->req.prompt.size() - s->n_fed);
    const int64_t chunk = std::min({remaining, budget, room});
    if (chunk <= 0) continue;
    for (int64_t i = 0; i < chunk; ++i) {
      tokens.push_back(s->req.prompt[s->n_fed + i]);
      pos.push_back(len + static_cast<int32_t>(i));
      seq.push_back(s->seq);
      want.push_back(0);
    }
    if (chunk == remaining) {
      want.back() = 1;
      s->row = static_cast<int32_t>(tokens.size()) - 1;
    }
    free_blocks -= blocks_for(len + static_cast<int32_t>(chunk)) - blocks_for(len);
    budget -= chunk;
  }
  if (tokens.empty()) {
    // Only half-prefilled prompts that no longer fit: end the newest.
    finish(*order.back(), Finish::kError, "the context is full (raise -c or lower --parallel)");
    return true;
  }
  try {
    ctx_.decode(tokens, pos, seq, want);
  } catch (const std::exception& e) {
    for (Slot* s : order) finish(*s, Finish::kError, e.what());
    return true;
  }
  // Account for what was decoded, then sample every slot that got logits.
  for (Slot* s : order) {
    if (!s->active) continue;
    if (s->prefilling()) {
      s->n_fed = static_cast<size_t>(ctx_.seq_len(s->seq));
    } else {
      s->next_token = -1;
    }
    if (s->row < 0) continue;
    if (s->req.n_predict == 0) {
      finish(*s, Finish::kLimit);
      continue;
    }
    try {
      const int32_t tok = s->req.sampler->sample(ctx_.logits(s->row));
      s->req.sampler->accept(tok);
      ++s->n_gen;
      if (tk_.vocab().is_eog(tok)) {
        finish(*s, Finish::kEos);
        continue;
      }
      s->text += s->detok->push(tok);
      feed_text(*s, /*final=*/false);
      if (!s->active) continue;
      if (s->req.n_predict >= 0 && s->n_gen >= s->req.n_predict) {
        finish(*s, Finish::kLimit);
      } else if (ctx_.seq_len(s->seq) >= ctx_.options().n_ctx) {
        finish(*s, Finish::kLimit);
      } else {
        s->next_token = tok;
      }
    } catch (const std::exception& e) {
      finish(*s, Finish::kError, e.what());
    }
  }
  return true;
}

}  // namespace strix::server
