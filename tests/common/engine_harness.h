// What the tests of the server's engine share (in-process, CPU or CUDA): a
// greedy request, waiting for a stream's end, and the reference: libllama's
// greedy continuation, optionally with llama-server's context shift and with
// the runner-up taken once (the comparison's negative control).
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ref/libllama.h"
#include "sampling/sampler.h"
#include "server/engine.h"
#include "tokenizer/tokenizer.h"

namespace strix::test {

// Temperature 0 with end-of-generation ignored (so a reply has n_predict tokens).
inline server::GenRequest greedy_request(const tok::Tokenizer& tk, std::vector<int32_t> prompt, int n_predict) {
  server::GenRequest r;
  r.prompt = std::move(prompt);
  sampling::Params p;
  p.temp = 0.0f;
  p.ignore_eos = true;
  r.sampler = std::make_unique<sampling::Sampler>(p, tk, 16384);
  r.n_predict = n_predict;
  return r;
}

// The stream's final event and all its text (an empty event after about a minute).
inline std::pair<server::GenEvent, std::string> wait_done(const std::shared_ptr<server::GenStream>& s) {
  std::string text;
  for (int i = 0; i < 60000; ++i) {
    for (server::GenEvent& e : s->take()) {
      text += e.text;
      if (e.done) return {e, text};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return {server::GenEvent{}, text};
}

struct RefGreedy {
  int swap_at = -1;       // >= 0: take the runner-up at this step
  int32_t shift_ctx = 0;  // > 0: llama-server's context shift in a context of this many cells
  int32_t n_keep = 0;     // the shift's n_keep (-1: the whole prompt; +1 for a BOS)
  int32_t n_discard = 0;  // the shift's n_discard (0: half of the rest)
};

// libllama: n greedy tokens after `rest` is decoded at position `at` of a
// context that holds `at` cells already; end-of-generation tokens never win
// (ignore_eos). The text of the tokens.
inline std::string ref_greedy_in(ref::LlamaContext& ctx, const ref::LlamaModel& m, std::vector<int32_t> rest,
                                 int32_t at, int n, const RefGreedy& o = {}, int32_t n_prompt = -1) {
  if (n_prompt < 0) n_prompt = at + static_cast<int32_t>(rest.size());
  std::string text;
  for (int i = 0; i < n; ++i) {
    if (o.shift_ctx > 0 && i > 0 && at + 1 >= o.shift_ctx) {
      int32_t keep = o.n_keep < 0 ? n_prompt : o.n_keep;
      if (m.add_bos()) ++keep;
      keep = std::min(o.shift_ctx - 4, keep);
      const int32_t n_left = at - keep;
      const int32_t discard = std::clamp(o.n_discard > 0 ? o.n_discard : n_left / 2, 0, std::max(0, n_left - 1));
      ctx.remove(0, keep, keep + discard);
      ctx.shift(0, keep + discard, at, -discard);
      at -= discard;
    }
    ctx.decode_seq(rest, at);
    at += static_cast<int32_t>(rest.size());
    const auto l = ctx.logits(static_cast<int32_t>(rest.size()) - 1);
    int32_t best = -1, second = -1;
    for (int32_t t = 0; t < static_cast<int32_t>(l.size()); ++t) {
      if (m.is_eog(t)) continue;
      if (best < 0 || l[t] > l[best]) {
        second = best;
        best = t;
      } else if (second < 0 || l[t] > l[second]) {
        second = t;
      }
    }
    const int32_t tok = i == o.swap_at ? second : best;
    text += m.token_to_piece(tok, false);
    rest = {tok};
  }
  return text;
}

// The same from an empty context of 1024 cells.
inline std::string ref_greedy_text(const ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                   const RefGreedy& o = {}) {
  ref::LlamaContext ctx(m, {.n_ctx = 1024, .n_batch = 1024, .n_ubatch = 512, .n_threads = 2});
  return ref_greedy_in(ctx, m, prompt, 0, n, o);
}

}  // namespace strix::test
