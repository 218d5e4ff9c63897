// common_sampler of the pinned llama.cpp build (common/sampling.cpp) over
// Strix's stages: the chain is logit-bias (user biases, then -inf for every
// end-of-generation token with ignore_eos, then the vocabulary's suppressed
// tokens), the stages in Params::stages order, then dist(seed) (adaptive-p
// instead when the stages name it); mirostat 1/2
// replace all of that after the bias with temp + mirostat (v2). temp <= 0
// needs no special case: the temperature stage keeps only the first maximal
// logit and dist then draws it. The grammar is not in the chain: the sampled
// token is checked against it, and only when it is rejected the grammar masks
// the full row and the chain runs again (common_sampler_sample with
// grammar_first = false). The reasoning budget (reasoning_budget.h) is not in
// the chain either: it masks the full row first, sees only generated tokens,
// and keeps a lazy grammar out of a thinking block.
#include "sampling/sampler.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "grammar/grammar.h"
#include "sampling/candidates.h"
#include "sampling/reasoning_budget.h"
#include "sampling/stages.h"
#include "tokenizer/tokenizer.h"

namespace strix::sampling {

namespace {

// llama.cpp's sampler names (common_sampler_types_from_names, with the
// alternative spellings it accepts for --samplers) and letters.
struct StageName {
  const char* name;
  Stage stage;
};
constexpr StageName kStageNames[] = {
    {"penalties", Stage::kPenalties},
    {"dry", Stage::kDry},
    {"top_n_sigma", Stage::kTopNSigma},
    {"top_k", Stage::kTopK},
    {"typ_p", Stage::kTypicalP},
    {"top_p", Stage::kTopP},
    {"min_p", Stage::kMinP},
    {"xtc", Stage::kXtc},
    {"temperature", Stage::kTemperature},
    {"infill", Stage::kInfill},
    {"adaptive_p", Stage::kAdaptiveP},
    {"adaptive-p", Stage::kAdaptiveP},
    {"top-k", Stage::kTopK},
    {"top-p", Stage::kTopP},
    {"top-n-sigma", Stage::kTopNSigma},
    {"nucleus", Stage::kTopP},
    {"typical-p", Stage::kTypicalP},
    {"typical", Stage::kTypicalP},
    {"typ-p", Stage::kTypicalP},
    {"typ", Stage::kTypicalP},
    {"min-p", Stage::kMinP},
    {"temp", Stage::kTemperature},
};
struct StageLetter {
  char letter;
  Stage stage;
};
constexpr StageLetter kStageLetters[] = {
    {'e', Stage::kPenalties},   {'d', Stage::kDry},    {'s', Stage::kTopNSigma}, {'k', Stage::kTopK},
    {'y', Stage::kTypicalP},    {'p', Stage::kTopP},   {'m', Stage::kMinP},      {'x', Stage::kXtc},
    {'t', Stage::kTemperature}, {'i', Stage::kInfill}, {'a', Stage::kAdaptiveP},
};

// The logit bias stage's entries: the request's, then -inf for every
// end-of-generation token (ignore_eos) and every suppressed token.
std::vector<std::pair<int32_t, float>> biases_of(const Params& params, const tok::Vocab& vocab) {
  std::vector<std::pair<int32_t, float>> biases(params.logit_bias.begin(), params.logit_bias.end());
  if (params.ignore_eos) {
    for (int32_t t : vocab.eog) biases.emplace_back(t, -INFINITY);
  }
  for (int32_t t : params.suppress_tokens) biases.emplace_back(t, -INFINITY);
  return biases;
}

// Whether the chain of these params picks the largest logit left after the
// logit biases (Sampler::pick_greedy): every stage either keeps the largest
// logit unchanged or is off.
bool greedy_chain(const Params& p) {
  if (p.mirostat != 0 || !(p.temp <= 0.0f) || p.dynatemp_range > 0.0f || p.n_probs > 0) return false;
  for (Stage st : p.stages) {
    switch (st) {
      case Stage::kPenalties:
        if (p.penalty_last_n != 0 && (p.penalty_repeat != 1.0f || p.penalty_freq != 0.0f || p.penalty_present != 0.0f))
          return false;
        break;
      case Stage::kDry:
        if (p.dry_multiplier != 0.0f) return false;
        break;
      case Stage::kTypicalP:
        if (!(p.typ_p >= 1.0f)) return false;
        break;
      case Stage::kXtc:
        if (p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f) return false;
        break;
      case Stage::kTopNSigma:  // keeps the largest (or is off)
      case Stage::kTopK:
      case Stage::kTopP:
      case Stage::kMinP:
      case Stage::kTemperature:
        break;
      default:  // infill, adaptive-p
        return false;
    }
  }
  return true;
}

}  // namespace

std::vector<Stage> parse_stages(const std::string& text, bool letters) {
  std::vector<Stage> out;
  if (letters) {
    for (const char c : text) {
      const auto it = std::find_if(std::begin(kStageLetters), std::end(kStageLetters),
                                   [c](const StageLetter& l) { return l.letter == c; });
      if (it == std::end(kStageLetters)) {
        throw Error(std::string("unknown sampler letter '") + c + "' in --sampling-seq \"" + text +
                    "\" (known: e d s k y p m x t i a)");
      }
      out.push_back(it->stage);
    }
    return out;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string name = text.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;  // "a;;b" or a trailing ';'
    const auto it = std::find_if(std::begin(kStageNames), std::end(kStageNames),
                                 [&name](const StageName& s) { return name == s.name; });
    if (it == std::end(kStageNames)) {
      throw Error("unknown sampler '" + name +
                  "' in --samplers (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, "
                  "temperature, infill, adaptive_p)");
    }
    out.push_back(it->stage);
  }
  return out;
}

struct Sampler::Impl {
  Impl(const Params& p, const tok::Tokenizer& t) : params(p), tokenizer(t) {}

  Params params;
  const tok::Tokenizer& tokenizer;
  int32_t n_vocab = 0;
  Workspace ws;
  std::vector<StepPtr> chain;
  std::vector<TokenData> cur;  // [n_vocab] candidates, reused
  Candidates cur_p;
  std::vector<std::pair<int32_t, float>> top;  // top_probs()
  std::unique_ptr<grammar::Matcher> matcher;
  std::unique_ptr<ReasoningBudget> budget;
  // pick_greedy(): whether the chain reduces to the largest logit that is not
  // banned, and the banned ids (sorted)
  bool greedy = false;
  std::vector<int32_t> banned;

  // common_sampler's grammar_should_apply: a lazy grammar stays out of a
  // thinking block (while the budget counts or forces).
  bool grammar_applies() const {
    if (!matcher) return false;
    if (!budget || !params.grammar_lazy) return true;
    const BudgetState st = budget->state();
    return st == BudgetState::kIdle || st == BudgetState::kDone;
  }

  // Feeds the generation prompt's tokens to the budget, as common_sampler_init
  // does with its prefill tokens: tokenized with special tokens parsed, minus
  // a first token that is only the space some tokenizers put before a leading
  // special token.
  void prime_budget(const std::string& generation_prompt) {
    if (generation_prompt.empty()) return;
    const std::vector<int32_t> ids =
        tokenizer.tokenize(generation_prompt, /*add_special=*/false, /*parse_special=*/true);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i == 0) {
        const std::string piece = tokenizer.token_to_piece(ids[i], /*special=*/true);
        const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
        if (!piece.empty() && space(piece[0]) && !space(generation_prompt[0])) continue;
      }
      budget->accept(ids[i]);
    }
  }

  void load(std::span<const float> logits) {
    for (int32_t i = 0; i < n_vocab; ++i) {
      const float x = logits[static_cast<size_t>(i)];
      // NaN or +inf would turn every probability into NaN; libllama would draw
      // garbage from it.
      if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) {
        throw Error("logit of token " + std::to_string(i) + " is " + (std::isnan(x) ? "NaN" : "+inf") +
                    "; cannot sample from this row");
      }
      cur[static_cast<size_t>(i)] = TokenData{i, x, 0.0f};
    }
    cur_p = Candidates{cur.data(), cur.size(), -1, false};
  }

  int32_t run_chain() {
    for (const StepPtr& step : chain) step->apply(cur_p);
    if (cur_p.selected < 0 || static_cast<size_t>(cur_p.selected) >= cur_p.size) {
      throw Error("the sampler chain selected no token (no candidate survived the stages)");
    }
    return cur_p.data[cur_p.selected].id;
  }

  void check_token(int32_t token) const {
    if (token < 0 || token >= n_vocab) {
      throw Error("token id " + std::to_string(token) + " is outside the vocabulary (0 .. " +
                  std::to_string(n_vocab - 1) + ")");
    }
  }
};

Sampler::Sampler(const Params& params, const tok::Tokenizer& tokenizer, int32_t n_ctx)
    : impl_(std::make_unique<Impl>(params, tokenizer)) {
  Impl& s = *impl_;
  const tok::Vocab& vocab = tokenizer.vocab();
  s.n_vocab = vocab.n_tokens();
  if (s.n_vocab <= 0) throw Error("cannot sample: the vocabulary is empty");
  if (params.mirostat < 0 || params.mirostat > 2) {
    throw Error("unknown mirostat version " + std::to_string(params.mirostat) + " (0: off, 1, 2)");
  }
  // -1: the context size, as common_init_from_params sets it.
  auto resolve_last_n = [n_ctx](int32_t last_n, const char* what) {
    if (last_n != -1) return last_n;
    if (n_ctx <= 0)
      throw Error(std::string(what) + " = -1 means the context size, but n_ctx is " + std::to_string(n_ctx));
    return n_ctx;
  };
  const int32_t penalty_last_n = resolve_last_n(params.penalty_last_n, "repeat_last_n");
  const int32_t dry_last_n = resolve_last_n(params.dry_penalty_last_n, "dry_penalty_last_n");

  for (const auto& [token, bias] : params.logit_bias) s.check_token(token);
  for (int32_t t : params.suppress_tokens) s.check_token(t);
  std::vector<std::pair<int32_t, float>> biases = biases_of(params, vocab);
  // pick_greedy(): only bans among the biases keep the chain's answer the largest allowed logit
  s.greedy = greedy_chain(params);
  for (const auto& [token, bias] : biases) {
    if (bias != -INFINITY) s.greedy = false;
    s.banned.push_back(token);
  }
  std::sort(s.banned.begin(), s.banned.end());
  if (!biases.empty()) s.chain.push_back(make_logit_bias(s.n_vocab, std::move(biases)));

  // size_t min_keep from int32, sign-extended as libllama receives it.
  const size_t min_keep = static_cast<size_t>(static_cast<int64_t>(params.min_keep));
  if (params.mirostat == 0) {
    bool use_adaptive_p = false;
    for (Stage stage : params.stages) {
      switch (stage) {
        case Stage::kPenalties:
          s.chain.push_back(make_penalties(s.n_vocab, penalty_last_n, params.penalty_repeat, params.penalty_freq,
                                           params.penalty_present));
          break;
        case Stage::kDry:
          s.chain.push_back(make_dry(tokenizer, params.dry_multiplier, params.dry_base, params.dry_allowed_length,
                                     dry_last_n, params.dry_sequence_breakers));
          break;
        case Stage::kTopNSigma:
          s.chain.push_back(make_top_n_sigma(params.top_n_sigma, s.ws));
          break;
        case Stage::kTopK:
          s.chain.push_back(make_top_k(params.top_k, s.ws));
          break;
        case Stage::kTypicalP:
          s.chain.push_back(make_typical(params.typ_p, min_keep, s.ws));
          break;
        case Stage::kTopP:
          s.chain.push_back(make_top_p(params.top_p, min_keep, s.ws));
          break;
        case Stage::kMinP:
          s.chain.push_back(make_min_p(params.min_p, min_keep, s.ws));
          break;
        case Stage::kXtc:
          s.chain.push_back(make_xtc(params.xtc_probability, params.xtc_threshold, min_keep, params.seed, s.ws));
          break;
        case Stage::kTemperature:
          s.chain.push_back(make_temp_ext(params.temp, params.dynatemp_range, params.dynatemp_exponent, s.ws));
          break;
        case Stage::kInfill:
          s.chain.push_back(make_infill(tokenizer, s.ws));
          break;
        case Stage::kAdaptiveP:
          use_adaptive_p = true;  // it selects the token, so it goes last
          break;
        default:
          throw Error("unknown sampler stage " + std::to_string(static_cast<int>(stage)));
      }
    }
    s.chain.push_back(use_adaptive_p ? make_adaptive_p(params.adaptive_target, params.adaptive_decay, params.seed, s.ws)
                                     : make_dist(params.seed));
  } else if (params.mirostat == 1) {
    s.chain.push_back(make_temp(params.temp));
    s.chain.push_back(make_mirostat(s.n_vocab, params.seed, params.mirostat_tau, params.mirostat_eta, /*m=*/100, s.ws));
  } else {
    s.chain.push_back(make_temp(params.temp));
    s.chain.push_back(make_mirostat_v2(params.seed, params.mirostat_tau, params.mirostat_eta, s.ws));
  }

  if (!params.grammar.empty()) {
    std::shared_ptr<const grammar::Grammar> g = grammar::Grammar::parse(params.grammar, "root", &tokenizer);
    grammar::LazyOptions lazy;
    lazy.lazy = params.grammar_lazy;
    lazy.trigger_patterns = params.grammar_trigger_patterns;
    lazy.trigger_tokens = params.grammar_trigger_tokens;
    s.matcher = std::make_unique<grammar::Matcher>(std::move(g), tokenizer, std::move(lazy));
  }

  // common_sampler_init arms the budget with tags and a budget (unlimited is
  // INT_MAX), or with tags and a lazy grammar, which it keeps out of the block.
  if (!params.reasoning_budget_start.empty() && !params.reasoning_budget_end.empty() &&
      (params.grammar_lazy || params.reasoning_budget_tokens >= 0)) {
    for (int32_t t : params.reasoning_budget_start) s.check_token(t);
    for (const auto& seq : params.reasoning_budget_end) {
      for (int32_t t : seq) s.check_token(t);
    }
    for (int32_t t : params.reasoning_budget_forced) s.check_token(t);
    s.budget = std::make_unique<ReasoningBudget>(
        &tokenizer, std::vector<TokenSeq>{params.reasoning_budget_start}, params.reasoning_budget_end,
        params.reasoning_budget_forced, params.reasoning_budget_tokens < 0 ? INT_MAX : params.reasoning_budget_tokens);
    s.prime_budget(params.generation_prompt);
  }

  s.greedy = s.greedy && !s.matcher && !s.budget;

  s.cur.resize(static_cast<size_t>(s.n_vocab));
  if (params.n_probs > 0) s.top.reserve(static_cast<size_t>(params.n_probs));
}

Sampler::~Sampler() = default;

std::optional<int32_t> Sampler::pick_greedy(std::span<const float> top, std::span<const int32_t> ids) const {
  const Impl& s = *impl_;
  if (!s.greedy || top.empty() || top.size() != ids.size()) return std::nullopt;
  auto allowed = [&](int32_t id) { return !std::binary_search(s.banned.begin(), s.banned.end(), id); };
  size_t j = 0;
  while (j < ids.size() && !allowed(ids[j])) ++j;
  if (j + 1 >= ids.size()) return std::nullopt;  // none allowed, or the last: a tie with the unseen is possible
  const float best = top[j];
  for (size_t k = j + 1; k < ids.size(); ++k) {
    if (allowed(ids[k])) {
      if (top[k] < best) return ids[j];
      return std::nullopt;  // a tie: the chain's order decides
    }
  }
  // every later listed one is banned; the unseen are at most the last listed
  if (top.back() < best) return ids[j];
  return std::nullopt;
}

int32_t Sampler::sample(const BatchContext& ctx, int32_t i) {
  if (const BatchContext::TopLogits top = ctx.top_logits(i); !top.id.empty()) {
    if (const std::optional<int32_t> tok = pick_greedy(top.logit, top.id)) return *tok;
  }
  return sample(ctx.logits(i));
}

int32_t Sampler::sample(std::span<const float> logits) {
  Impl& s = *impl_;
  if (logits.size() != static_cast<size_t>(s.n_vocab)) {
    throw Error("sample(): got " + std::to_string(logits.size()) + " logits for a vocabulary of " +
                std::to_string(s.n_vocab));
  }
  s.load(logits);
  if (s.budget) s.budget->apply(s.cur_p);  // first, on the full row
  int32_t id = s.run_chain();
  if (s.grammar_applies()) {
    // Grammar-based rejection sampling: keep the draw if the grammar allows it.
    TokenData single{id, 1.0f, 0.0f};
    s.matcher->apply(&single, 1);
    if (single.logit == -INFINITY) {
      s.load(logits);
      if (s.budget) s.budget->apply(s.cur_p);
      s.matcher->apply(s.cur_p.data, s.cur_p.size);
      id = s.run_chain();
    }
  }
  if (s.params.n_probs > 0) {
    // common_sampler_get_candidates(do_sort = true): by probability, descending.
    Candidates& c = s.cur_p;
    if (!c.sorted) {
      std::sort(c.data, c.data + c.size, [](const TokenData& a, const TokenData& b) { return a.p > b.p; });
      c.sorted = true;
    }
    s.top.clear();
    const size_t n = std::min(c.size, static_cast<size_t>(s.params.n_probs));
    for (size_t i = 0; i < n; ++i) s.top.emplace_back(c.data[i].id, c.data[i].p);
  }
  return id;
}

void Sampler::accept(int32_t token, bool accept_grammar) {
  Impl& s = *impl_;
  s.check_token(token);
  // Decided before the budget sees the token: the token that closes a block
  // still belongs to the block.
  const bool to_grammar = accept_grammar && s.grammar_applies();
  if (s.budget && accept_grammar) {
    s.budget->accept(token);
    // A lazy grammar kept out of the block missed the end tag, which may be
    // its trigger: replay it once the block is over.
    if (s.matcher && !to_grammar && s.budget->state() == BudgetState::kDone) {
      if (const TokenSeq* end = s.budget->end_match()) {
        for (int32_t t : *end) s.matcher->accept(t);
      }
    }
  }
  if (to_grammar) s.matcher->accept(token);
  for (const StepPtr& step : s.chain) step->accept(token);
}

void Sampler::reset() {
  Impl& s = *impl_;
  for (const StepPtr& step : s.chain) step->reset();
  if (s.matcher) s.matcher->reset();
}

bool Sampler::has_reasoning_budget() const { return impl_->budget != nullptr; }

void Sampler::prime_reasoning_budget(const std::string& generation_prompt) {
  Impl& s = *impl_;
  if (!s.budget) return;
  s.budget->reset();
  s.prime_budget(generation_prompt);
}

bool Sampler::reasoning_budget_force() { return impl_->budget && impl_->budget->force(); }

std::span<const std::pair<int32_t, float>> Sampler::top_probs() const { return impl_->top; }

uint32_t Sampler::seed() const {
  // llama_sampler_get_seed of the chain: the last stage that has a seed.
  for (auto it = impl_->chain.rbegin(); it != impl_->chain.rend(); ++it) {
    const uint32_t seed = (*it)->seed();
    if (seed != kDefaultSeed) return seed;
  }
  return kDefaultSeed;
}

std::string Sampler::describe() const {
  std::string out = "sampler chain: logits ";
  for (const StepPtr& step : impl_->chain) out += std::string("-> ") + step->name() + " ";
  return out;
}

}  // namespace strix::sampling
