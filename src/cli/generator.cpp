#include "cli/generator.h"

#include <algorithm>
#include <cstdio>

namespace strix::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// "x ms per token, y tokens per second", 0 where nothing was counted.
double per(double ms, int32_t n) { return n > 0 ? ms / n : 0.0; }
double rate(double ms, int32_t n) { return ms > 0 ? 1e3 * n / ms : 0.0; }

}  // namespace

void Perf::print() const {
  std::fprintf(stderr,
               "llama_perf_sampler_print:    sampling time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens "
               "per second)\n",
               t_sample_ms, n_sample, per(t_sample_ms, n_sample), rate(t_sample_ms, n_sample));
  std::fprintf(stderr, "llama_perf_context_print:        load time = %10.2f ms\n", t_load_ms);
  std::fprintf(stderr,
               "llama_perf_context_print: prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens "
               "per second)\n",
               t_p_eval_ms, n_p_eval, per(t_p_eval_ms, n_p_eval), rate(t_p_eval_ms, n_p_eval));
  std::fprintf(stderr,
               "llama_perf_context_print:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens "
               "per second)\n",
               t_eval_ms, n_eval, per(t_eval_ms, n_eval), rate(t_eval_ms, n_eval));
  std::fprintf(stderr, "llama_perf_context_print:       total time = %10.2f ms / %5d tokens\n", ms_since(t_start),
               n_p_eval + n_eval);
}

Generator::Generator(BatchContext& ctx, const tok::Tokenizer& tk, sampling::Sampler& sampler, Console& console,
                     Perf& perf, int32_t n_batch)
    : ctx_(ctx), tk_(tk), sampler_(sampler), console_(console), perf_(perf), n_batch_(std::max<int32_t>(1, n_batch)) {}

void Generator::queue(std::span<const int32_t> tokens, bool into_history) {
  pending_.insert(pending_.end(), tokens.begin(), tokens.end());
  if (into_history) {
    // as llama.cpp: prompt and user tokens feed the penalty/DRY history but
    // never the grammar (common_sampler_accept(..., accept_grammar = false))
    const auto t0 = Clock::now();
    for (int32_t t : tokens) sampler_.accept(t, /*accept_grammar=*/false);
    perf_.t_sample_ms += ms_since(t0);
  }
}

bool Generator::flush() {
  if (pending_.empty()) return true;
  // llama-completion: when n_past + batch >= n_ctx it stops, or with context
  // shift keeps n_keep cells and drops half of the rest (n_discard), moving the
  // later cells down
  if (static_cast<int64_t>(ctx_.seq_len(0)) + static_cast<int64_t>(pending_.size()) >= ctx_.n_ctx()) {
    const int32_t n_past = ctx_.seq_len(0);
    const int32_t n_discard = (n_past - n_keep_) / 2;
    if (!shift_ || n_discard <= 0) return false;
    ctx_.seq_cut(0, n_keep_, n_keep_ + n_discard);
    if (static_cast<int64_t>(ctx_.seq_len(0)) + static_cast<int64_t>(pending_.size()) >= ctx_.n_ctx()) return false;
  }
  for (size_t i = 0; i < pending_.size(); i += static_cast<size_t>(n_batch_)) {
    const size_t n = std::min(pending_.size() - i, static_cast<size_t>(n_batch_));
    const auto t0 = Clock::now();
    ctx_.decode_seq(std::span<const int32_t>(pending_.data() + i, n));
    const double ms = ms_since(t0);
    // libllama counts a decode of more than one token as prompt evaluation
    if (n > 1) {
      perf_.t_p_eval_ms += ms;
      perf_.n_p_eval += static_cast<int32_t>(n);
    } else {
      perf_.t_eval_ms += ms;
      perf_.n_eval += 1;
    }
  }
  pending_.clear();
  return true;
}

Generator::Stop Generator::generate(int32_t n_predict, const std::vector<std::string>& antiprompts,
                                    tok::StreamDetokenizer& detok, std::string& text) {
  int32_t n_done = 0;
  for (;;) {
    if (!flush()) return Stop::kContextFull;
    if (take_interrupt()) return Stop::kInterrupted;
    const auto t0 = Clock::now();
    const int32_t tok = sampler_.sample(ctx_, -1);
    sampler_.accept(tok);
    perf_.t_sample_ms += ms_since(t0);
    perf_.n_sample += 1;
    // decoded before the next draw (or at the start of the next turn)
    pending_.push_back(tok);
    if (tk_.vocab().is_eog(tok)) return Stop::kEog;
    const std::string piece = detok.push(tok);
    console_.write(piece);
    text += piece;
    ++n_done;
    for (const auto& a : antiprompts) {
      if (a.empty()) continue;
      // only where the new piece could have completed it
      const size_t from = text.size() >= piece.size() + a.size() ? text.size() - piece.size() - a.size() : 0;
      if (text.find(a, from) != std::string::npos) return Stop::kAntiprompt;
    }
    if (n_predict >= 0 && n_done >= n_predict) return Stop::kLimit;
  }
}

}  // namespace strix::cli
