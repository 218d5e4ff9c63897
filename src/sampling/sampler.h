// Token sampling as llama.cpp's common_sampler does it: the same samplers, the
// same default chain and order, the same seeds, so that with the same logits
// Strix draws the same tokens as libllama's sampler chain.
//
// Contract shared by the CLI (apps/strix) and the server: build a Sampler from
// Params once per sequence, call sample() on each row of logits, then accept()
// the token that was emitted (sample() does not accept by itself, as in
// common_sampler_sample + common_sampler_accept).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/batch_context.h"

namespace strix::tok {
class Tokenizer;
}

namespace strix::sampling {

// One stage of the chain (llama.cpp's common_sampler_type).
// kAdaptiveP is not a position in the chain: listing it makes adaptive-p the
// final sampler instead of dist (common_sampler_init's use_adaptive_p).
enum class Stage {
  kPenalties,
  kDry,
  kTopNSigma,
  kTopK,
  kTypicalP,
  kTopP,
  kMinP,
  kXtc,
  kTemperature,
  kInfill,
  kAdaptiveP
};

// llama.cpp's common_params_sampling, same field meanings and defaults.
struct Params {
  uint32_t seed = 0xFFFFFFFFu;  // LLAMA_DEFAULT_SEED: a random seed
  int32_t n_prev = 64;
  int32_t n_probs = 0;  // > 0: top_probs() returns this many after each sample()
  int32_t min_keep = 0;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float xtc_probability = 0.0f;
  float xtc_threshold = 0.10f;
  float typ_p = 1.0f;
  float temp = 0.80f;  // <= 0: greedy
  float dynatemp_range = 0.0f;
  float dynatemp_exponent = 1.0f;
  int32_t penalty_last_n = 64;  // -1: context size
  float penalty_repeat = 1.0f;
  float penalty_freq = 0.0f;
  float penalty_present = 0.0f;
  float dry_multiplier = 0.0f;
  float dry_base = 1.75f;
  int32_t dry_allowed_length = 2;
  int32_t dry_penalty_last_n = -1;  // -1: context size
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  int32_t mirostat = 0;  // 0 off, 1 v1, 2 v2
  float mirostat_tau = 5.0f;
  float mirostat_eta = 0.1f;
  float top_n_sigma = -1.0f;
  float adaptive_target = -1.0f;  // adaptive-p: < 0 draws from the distribution unchanged
  float adaptive_decay = 0.90f;   // adaptive-p: EMA decay (clamped to 0 .. 0.99)
  bool ignore_eos = false;        // adds logit bias -inf to every end-of-generation token
  std::vector<Stage> stages = {Stage::kPenalties, Stage::kDry,  Stage::kTopNSigma, Stage::kTopK,       Stage::kTypicalP,
                               Stage::kTopP,      Stage::kMinP, Stage::kXtc,       Stage::kTemperature};
  std::vector<std::pair<int32_t, float>> logit_bias;
  // The model's tokenizer.ggml.suppress_tokens (llama_vocab_get_suppress_tokens):
  // common_sampler adds a -inf bias for each, after logit_bias and ignore_eos.
  std::vector<int32_t> suppress_tokens;
  std::string grammar;  // GBNF text; empty: unconstrained
  bool grammar_lazy = false;
  std::vector<std::string> grammar_trigger_patterns;  // lazy grammar: regexes that switch it on
  std::vector<int32_t> grammar_trigger_tokens;
  // The reasoning budget (common_params_sampling's reasoning_budget_*, see
  // reasoning_budget.h): with a start and an end sequence, and a budget >= 0
  // or a lazy grammar, it runs on the full row before everything else and
  // sees the generated tokens. The tokens of generation_prompt (the chat
  // template's generation prompt, e.g. "<|im_start|>assistant\n<think>\n")
  // prime it, so a prompt that opens the block starts it counting.
  int32_t reasoning_budget_tokens = -1;                    // -1: unlimited
  std::vector<int32_t> reasoning_budget_start;             // opens a thinking block ("<think>")
  std::vector<std::vector<int32_t>> reasoning_budget_end;  // any of them closes it ("</think>")
  std::vector<int32_t> reasoning_budget_forced;            // forced once the budget is spent (message + end tag)
  std::string generation_prompt;
};

// "--samplers" value: names separated by ';' (penalties;dry;top_n_sigma;top_k;
// typ_p;top_p;min_p;xtc;temperature;infill;adaptive_p, with llama.cpp's
// aliases; empty entries are skipped) or, for "--sampling-seq", one letter
// each (e d s k y p m x t i a). Throws strix::Error naming an unknown entry.
std::vector<Stage> parse_stages(const std::string& text, bool letters);

class Sampler {
 public:
  // n_ctx bounds penalty_last_n / dry_penalty_last_n of -1.
  Sampler(const Params& params, const tok::Tokenizer& tokenizer, int32_t n_ctx);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Draws one token from a row of n_vocab logits. Does not change the history
  // (but advances the RNGs). Throws strix::Error on a row of the wrong size or
  // one holding NaN or +inf.
  int32_t sample(std::span<const float> logits);
  // The token sample() would draw, decided from the row's largest logits
  // alone (largest first, equal values by the lower id first, as
  // BatchContext::top_logits gives them), so the whole row need not be read.
  // Only a greedy sampler answers: temperature <= 0 without dynamic range, no
  // mirostat, grammar, reasoning budget or n_probs, no stage that changes
  // logits or can pass over the largest (penalties and DRY at their neutral
  // values, typical-p >= 1, XTC off, no infill or adaptive-p stage), and only
  // bans (-inf) among the logit biases. Then the largest logit that is not
  // banned wins, unless the next one allowed equals it or the list cannot
  // show that it is smaller: nullopt, and sample() decides from the row.
  // Leaves the history alone, as sample() does.
  std::optional<int32_t> pick_greedy(std::span<const float> top, std::span<const int32_t> ids) const;
  // sample() of batch index i of ctx's last decode: a greedy sampler decides
  // from the backend's largest logits when it found them (pick_greedy; the CUDA
  // context does, on the device), so the row is not copied; else from the row.
  int32_t sample(const BatchContext& ctx, int32_t i);
  // Appends the emitted token to the history (penalties, DRY, grammar). Throws
  // strix::Error for an id outside the vocabulary or one the grammar forbids.
  // accept_grammar = false: history only (common_sampler_accept's flag; the
  // CLI feeds prompt tokens that way, the grammar constrains only the output,
  // and the reasoning budget counts only the output).
  void accept(int32_t token, bool accept_grammar = true);
  // common_sampler_reset: every stage resets as libllama's do (penalty/DRY
  // history cleared, mirostat mu restored, and the dist/xtc/mirostat RNGs
  // re-seeded from Params::seed, a fresh random seed for the default), and
  // the grammar restarts. The reasoning budget keeps its state, as
  // common_sampler_reset leaves it alone (prime_reasoning_budget restarts it).
  void reset();

  // Reasoning budget (none unless Params configured one). prime: back to
  // "outside a block" with a full budget, then the tokens of a generation
  // prompt are fed to it as at construction (for a new turn of a chat).
  bool has_reasoning_budget() const;
  void prime_reasoning_budget(const std::string& generation_prompt);
  // common_sampler_reasoning_budget_force: inside a block that is still
  // counting, start forcing the end tag now. False otherwise.
  bool reasoning_budget_force();

  // After sample() with n_probs > 0: (token, probability) of the candidates as
  // the chain left them, most probable first (llama.cpp's n_probs output).
  std::span<const std::pair<int32_t, float>> top_probs() const;

  // The seed actually used (the drawn one when Params::seed was the default).
  uint32_t seed() const;
  // llama.cpp's "sampler chain: logits -> ..." description line (stage names as
  // llama_sampler_name gives them, "?name" for a stage its parameters disable).
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strix::sampling
