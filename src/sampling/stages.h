// The sampler stages, one per libllama llama_sampler_init_* of the pinned build,
// with the same parameters, the same "empty" cases (where libllama returns a
// no-op sampler named "?<name>") and the same state across apply / accept /
// reset. Sampler (sampler.cpp) strings them into common_sampler's chain.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sampling/candidates.h"
#include "sampling/rng.h"

namespace strix::tok {
class Tokenizer;
}

namespace strix::sampling {

// Buffers shared by the stages of one chain (they run one after another).
struct Workspace {
  SortScratch sort;
  std::vector<TokenData> kept;  // min-p, typical: the surviving entries
  std::vector<TokenData> top;   // top-p: the partially sorted head
  std::vector<float> scores;    // typical: |-log p - entropy|
  std::vector<size_t> order;    // typical: candidate indices by score
  std::vector<double> cum;      // discrete_draw
};

class Step {
 public:
  virtual ~Step() = default;
  // llama_sampler_name.
  virtual const char* name() const = 0;
  virtual void apply(Candidates& cur) = 0;
  virtual void accept(int32_t /*token*/) {}
  virtual void reset() {}
  // llama_sampler_get_seed: the drawn seed of dist / mirostat / mirostat-v2.
  virtual uint32_t seed() const { return kDefaultSeed; }
};

using StepPtr = std::unique_ptr<Step>;

StepPtr make_dist(uint32_t seed);
StepPtr make_top_k(int32_t k, Workspace& ws);
StepPtr make_top_p(float p, size_t min_keep, Workspace& ws);
StepPtr make_min_p(float p, size_t min_keep, Workspace& ws);
StepPtr make_typical(float p, size_t min_keep, Workspace& ws);
StepPtr make_temp(float t);
StepPtr make_temp_ext(float t, float delta, float exponent, Workspace& ws);
StepPtr make_xtc(float p, float t, size_t min_keep, uint32_t seed, Workspace& ws);
StepPtr make_top_n_sigma(float n, Workspace& ws);
StepPtr make_mirostat(int32_t n_vocab, uint32_t seed, float tau, float eta, int32_t m, Workspace& ws);
StepPtr make_mirostat_v2(uint32_t seed, float tau, float eta, Workspace& ws);
// penalty_last_n must already be resolved (no -1); <= 0 disables.
StepPtr make_penalties(int32_t n_vocab, int32_t last_n, float repeat, float freq, float present);
StepPtr make_logit_bias(int32_t n_vocab, std::vector<std::pair<int32_t, float>> biases);
// dry.cpp. penalty_last_n must already be resolved; <= 0 disables. The
// breakers are strings, matched against the tokenizer's pieces as libllama does.
StepPtr make_dry(const tok::Tokenizer& tokenizer, float multiplier, float base, int32_t allowed_length,
                 int32_t penalty_last_n, const std::vector<std::string>& breakers);
// infill.cpp.
StepPtr make_infill(const tok::Tokenizer& tokenizer, Workspace& ws);
// adaptive_p.cpp: the chain's final sampler in place of dist (decay clamped to
// [0, 0.99]; a negative target draws from the unchanged distribution).
StepPtr make_adaptive_p(float target, float decay, uint32_t seed, Workspace& ws);

}  // namespace strix::sampling
