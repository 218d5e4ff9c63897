// Shared helpers of the sampling tests: vocabularies seen by both libllama and
// Strix, the reference chain built from libllama's own samplers the way
// common_sampler_init strings them, a generator of peaked logit rows (with
// optional ties, -inf entries and repetition so that penalties and DRY bite),
// and a side-by-side driver that feeds both the same rows and reports the
// first step where the drawn tokens (or the reported probabilities) differ.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/vocab_gguf.h"
#include "core/source_dir.h"
#include "gguf/writer.h"
#include "ref/libllama.h"
#include "sampling/sampler.h"
#include "synth/vocab_import.h"
#include "tokenizer/tokenizer.h"

namespace strix::sampling::test {

namespace fs = std::filesystem;
namespace abi = ref::llama_abi;

inline const std::string kStories = std::string(STRIX_SOURCE_DIR) + "/../shared/data/stories260K.gguf";
inline bool have_shared() { return fs::exists(kStories); }

#define REQUIRE_SHARED() \
  if (!::strix::sampling::test::have_shared()) GTEST_SKIP() << ::strix::sampling::test::kStories << " is absent"

// One vocabulary: Strix's tokenizer, and (when libllama can load it) libllama's.
struct Env {
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::unique_ptr<ref::LlamaModel> model;  // vocab only; null for a synthetic vocab
  int32_t n_vocab = 0;
};

inline Env load_env(const std::string& path) {
  Env e;
  e.model = std::make_unique<ref::LlamaModel>(path, ref::LlamaModel::Options{.vocab_only = true});
  e.tokenizer = std::make_unique<tok::Tokenizer>(tok::Tokenizer::from_file(path));
  e.n_vocab = e.tokenizer->vocab().n_tokens();
  return e;
}

inline Env& stories() {
  static Env e = load_env(kStories);
  return e;
}

// llama3_1's byte-level BPE vocabulary (128,256 tokens) as a vocab-only GGUF.
inline Env& llama3() {
  static Env e = strix::test::with_vocab_only_gguf("llama3_1", [](const std::string& path) { return load_env(path); });
  return e;
}

// A vocabulary of n plain tokens, for stages that need no token text (libllama
// gets n_vocab only).
inline Env synthetic(int32_t n) {
  tok::Vocab v;
  v.model = "llama";
  v.tokens.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    char text[16];
    std::snprintf(text, sizeof text, "t%d", i);  // (operator+ trips a GCC 12 -Wrestrict false positive)
    v.tokens[static_cast<size_t>(i)].text = text;
  }
  v.eog = {2};
  Env e;
  e.tokenizer = std::make_unique<tok::Tokenizer>(std::move(v));
  e.n_vocab = n;
  return e;
}

// The chain common_sampler_init builds, from libllama's samplers. n_ctx
// resolves the -1 windows as common_init_from_params does.
inline ref::LlamaSampler reference_chain(const Params& p, const Env& env, int32_t n_ctx) {
  ref::LlamaSampler ch;
  const int32_t n_vocab = env.n_vocab;
  std::vector<abi::LogitBias> biases;
  for (const auto& [t, b] : p.logit_bias) biases.push_back({t, b});
  if (p.ignore_eos) {
    for (int32_t t = 0; t < n_vocab; ++t) {
      if (env.model ? env.model->is_eog(t) : env.tokenizer->vocab().is_eog(t)) biases.push_back({t, -INFINITY});
    }
  }
  for (int32_t t : p.suppress_tokens) biases.push_back({t, -INFINITY});
  if (!biases.empty()) ch.logit_bias(n_vocab, biases);
  const int32_t last_n = p.penalty_last_n == -1 ? n_ctx : p.penalty_last_n;
  const int32_t dry_last_n = p.dry_penalty_last_n == -1 ? n_ctx : p.dry_penalty_last_n;
  const size_t min_keep = static_cast<size_t>(static_cast<int64_t>(p.min_keep));
  if (p.mirostat == 0) {
    bool use_adaptive_p = false;
    for (Stage st : p.stages) {
      switch (st) {
        case Stage::kPenalties:
          ch.penalties(n_vocab, last_n, p.penalty_repeat, p.penalty_freq, p.penalty_present);
          break;
        case Stage::kDry:
          ch.dry(env.model.get(), p.dry_multiplier, p.dry_base, p.dry_allowed_length, dry_last_n,
                 p.dry_sequence_breakers);
          break;
        case Stage::kTopNSigma:
          ch.top_n_sigma(p.top_n_sigma);
          break;
        case Stage::kTopK:
          ch.top_k(p.top_k);
          break;
        case Stage::kTypicalP:
          ch.typical(p.typ_p, min_keep);
          break;
        case Stage::kTopP:
          ch.top_p(p.top_p, min_keep);
          break;
        case Stage::kMinP:
          ch.min_p(p.min_p, min_keep);
          break;
        case Stage::kXtc:
          ch.xtc(p.xtc_probability, p.xtc_threshold, min_keep, p.seed);
          break;
        case Stage::kTemperature:
          ch.temp_ext(p.temp, p.dynatemp_range, p.dynatemp_exponent);
          break;
        case Stage::kInfill:
          ch.infill(*env.model);
          break;
        case Stage::kAdaptiveP:
          use_adaptive_p = true;
          break;
      }
    }
    if (use_adaptive_p) {
      ch.adaptive_p(p.adaptive_target, p.adaptive_decay, p.seed);
    } else {
      ch.dist(p.seed);
    }
  } else if (p.mirostat == 1) {
    ch.temp(p.temp);
    ch.mirostat(n_vocab, p.seed, p.mirostat_tau, p.mirostat_eta, 100);
  } else {
    ch.temp(p.temp);
    ch.mirostat_v2(p.seed, p.mirostat_tau, p.mirostat_eta);
  }
  return ch;
}

// Peaked random logit rows.
struct RowOptions {
  float sigma = 2.0f;     // background noise
  int n_peaks = 3;        // random tokens lifted by 3..8
  int repeat_period = 0;  // > 0: lift the token seen this many steps ago (loops for penalties / DRY)
  float repeat_lift = 6.0f;
  float tie_step = 0.0f;         // > 0: logits rounded to multiples of it (many ties)
  float neg_inf_frac = 0.0f;     // share of entries set to -inf
  std::vector<int32_t> favored;  // tokens lifted now and then (e.g. DRY breakers)
};

class RowGen {
 public:
  RowGen(int32_t n_vocab, uint64_t seed, RowOptions o) : n_(n_vocab), rng_(seed), o_(std::move(o)) {}
  const std::vector<float>& next(const std::vector<int32_t>& history) {
    row_.resize(static_cast<size_t>(n_));
    std::normal_distribution<float> noise(0.0f, o_.sigma);
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    std::uniform_int_distribution<int32_t> tok(0, n_ - 1);
    for (float& x : row_) x = noise(rng_);
    for (int i = 0; i < o_.n_peaks; ++i) row_[static_cast<size_t>(tok(rng_))] += 3.0f + 5.0f * u01(rng_);
    if (o_.repeat_period > 0 && history.size() >= static_cast<size_t>(o_.repeat_period) && u01(rng_) < 0.8f) {
      row_[static_cast<size_t>(history[history.size() - static_cast<size_t>(o_.repeat_period)])] += o_.repeat_lift;
    }
    if (!o_.favored.empty() && u01(rng_) < 0.15f) {
      row_[static_cast<size_t>(o_.favored[rng_() % o_.favored.size()])] += 9.0f;
    }
    if (o_.tie_step > 0.0f) {
      for (float& x : row_) x = std::round(x / o_.tie_step) * o_.tie_step;
    }
    if (o_.neg_inf_frac > 0.0f) {
      for (float& x : row_) {
        if (u01(rng_) < o_.neg_inf_frac) x = -INFINITY;
      }
    }
    return row_;
  }

 private:
  int32_t n_;
  std::mt19937_64 rng_;
  RowOptions o_;
  std::vector<float> row_;
};

struct RunResult {
  int first_mismatch = -1;  // step, or -1 when all steps agreed
  std::string detail;
  std::vector<int32_t> tokens;  // the reference's draws
};

// Drives Strix's Sampler and the reference chain side by side for `steps`
// rows: same row, then each side's draw is compared and accepted. With a
// grammar, the reference does what common_sampler_sample does (check the draw
// against the grammar, resample over the grammar-masked row when rejected).
// ref_params (default: p) builds the reference, for negative controls.
inline RunResult run_side_by_side(const Env& env, const Params& p, int steps, uint64_t row_seed, const RowOptions& ro,
                                  int32_t n_ctx = 4096, const Params* ref_params = nullptr, bool reset_halfway = false,
                                  const std::vector<int32_t>& prompt = {}) {
  Sampler ours(p, *env.tokenizer, n_ctx);
  Params rp = ref_params != nullptr ? *ref_params : p;
  if (rp.seed == 0xFFFFFFFFu) rp.seed = ours.seed();  // a random seed: give the reference the one Strix drew
  ref::LlamaSampler chain = reference_chain(rp, env, n_ctx);
  std::unique_ptr<ref::LlamaSampler> grammar;
  if (!rp.grammar.empty()) {
    grammar = std::make_unique<ref::LlamaSampler>();
    if (rp.grammar_lazy) {
      grammar->grammar_lazy(*env.model, rp.grammar, "root", rp.grammar_trigger_patterns, rp.grammar_trigger_tokens);
    } else {
      grammar->grammar(*env.model, rp.grammar);
    }
  }
  // Prompt tokens go into the history only, not into the grammar (as the CLI
  // feeds them: common_sampler_accept(..., accept_grammar = false)).
  for (int32_t t : prompt) {
    chain.accept(t);
    ours.accept(t, /*accept_grammar=*/false);
  }
  RowGen gen(env.n_vocab, row_seed, ro);
  RunResult res;
  std::vector<abi::TokenData> cand(static_cast<size_t>(env.n_vocab));
  abi::TokenDataArray arr{};
  auto fill = [&](const std::vector<float>& row) {
    for (int32_t i = 0; i < env.n_vocab; ++i) cand[static_cast<size_t>(i)] = {i, row[static_cast<size_t>(i)], 0.0f};
    arr = abi::TokenDataArray{cand.data(), cand.size(), -1, false};
  };
  for (int step = 0; step < steps; ++step) {
    if (reset_halfway && step == steps / 2) {
      ours.reset();
      chain.reset();
      if (grammar) grammar->reset();
    }
    const std::vector<float>& row = gen.next(res.tokens);
    fill(row);
    chain.apply(arr);
    if (arr.selected < 0 || static_cast<size_t>(arr.selected) >= arr.size) {
      res.first_mismatch = step;
      res.detail = "the reference selected nothing";
      return res;
    }
    int32_t want = arr.data[arr.selected].id;
    if (grammar) {
      abi::TokenData single{want, 1.0f, 0.0f};
      abi::TokenDataArray one{&single, 1, -1, false};
      grammar->apply(one);
      if (single.logit == -INFINITY) {
        fill(row);
        grammar->apply(arr);
        chain.apply(arr);
        want = arr.data[arr.selected].id;
      }
    }
    const int32_t got = ours.sample(row);
    if (got != want) {
      res.first_mismatch = step;
      res.detail =
          "step " + std::to_string(step) + ": libllama drew " + std::to_string(want) + ", Strix " + std::to_string(got);
      return res;
    }
    if (p.n_probs > 0) {
      if (!arr.sorted) {
        std::sort(arr.data, arr.data + arr.size,
                  [](const abi::TokenData& a, const abi::TokenData& b) { return a.p > b.p; });
      }
      const auto top = ours.top_probs();
      const size_t n = std::min(arr.size, static_cast<size_t>(p.n_probs));
      bool same = top.size() == n;
      for (size_t i = 0; same && i < n; ++i) {
        same = top[i].first == arr.data[i].id && std::memcmp(&top[i].second, &arr.data[i].p, sizeof(float)) == 0;
      }
      if (!same) {
        res.first_mismatch = step;
        res.detail = "step " + std::to_string(step) + ": the top " + std::to_string(n) + " probabilities differ";
        if (!top.empty() && n > 0) {
          res.detail += " (first: libllama " + std::to_string(arr.data[0].id) + "=" + std::to_string(arr.data[0].p) +
                        ", Strix " + std::to_string(top[0].first) + "=" + std::to_string(top[0].second) + ")";
        }
        return res;
      }
    }
    if (grammar) grammar->accept(want);
    chain.accept(want);
    ours.accept(got);
    res.tokens.push_back(want);
  }
  return res;
}

}  // namespace strix::sampling::test
