// The decode/sample loop under the CLI: tokens queued for the model (prompt,
// user input, the last sampled token) are decoded in -b sized chunks right
// before the next token is drawn, as llama-completion's main loop does, and
// the timings are counted the way libllama's perf counters count them.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cli/console.h"
#include "runtime/batch_context.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace strix::cli {

// llama_perf_context_data + llama_perf_sampler_data.
struct Perf {
  std::chrono::steady_clock::time_point t_start;
  double t_load_ms = 0, t_p_eval_ms = 0, t_eval_ms = 0, t_sample_ms = 0;
  int32_t n_p_eval = 0, n_eval = 0, n_sample = 0;
  // llama_perf_sampler_print + llama_perf_context_print lines, to stderr.
  void print() const;
};

class Generator {
 public:
  Generator(BatchContext& ctx, const tok::Tokenizer& tk, sampling::Sampler& sampler, Console& console, Perf& perf,
            int32_t n_batch);

  // Tokens to decode before the next draw. into_history: also append them to
  // the sampler's history (penalties, DRY), as llama.cpp does for prompt and
  // user tokens (never to the grammar, which sees only generated tokens).
  void queue(std::span<const int32_t> tokens, bool into_history);
  // Decodes what is queued. False when it would not fit in the context
  // (nothing is decoded then).
  bool flush();

  enum class Stop { kEog, kLimit, kAntiprompt, kContextFull, kInterrupted };
  // Draws up to n_predict tokens (< 0: no limit), printing each piece as it is
  // complete; `text` receives the generated text (special tokens rendered as "").
  Stop generate(int32_t n_predict, const std::vector<std::string>& antiprompts, tok::StreamDetokenizer& detok,
                std::string& text);

  // llama-completion's context shift: when the queued tokens would not fit,
  // the first n_keep cells stay, half of the rest is dropped and the later
  // cells move down (BatchContext::seq_cut).
  void enable_context_shift(int32_t n_keep) {
    shift_ = true;
    n_keep_ = n_keep;
  }

  int32_t n_past() const { return ctx_.seq_len(0); }
  int64_t n_ctx() const { return ctx_.n_ctx(); }

 private:
  BatchContext& ctx_;
  const tok::Tokenizer& tk_;
  sampling::Sampler& sampler_;
  Console& console_;
  Perf& perf_;
  int32_t n_batch_;
  std::vector<int32_t> pending_;
  bool shift_ = false;
  int32_t n_keep_ = 0;
};

}  // namespace strix::cli
