// libllama-common.so of the pinned build (llama.cpp's common/ library, built
// against the same libllama.v0.5.0.so that LibLlama loads), for the few of its
// functions Strix checks itself against: the reasoning-budget sampler.
//
// These are C++ functions: they are looked up by their mangled names and take
// std::vector arguments, which is sound because Strix and the library share
// libstdc++'s ABI (GCC, the C++11 ABI). The library is loaded after LibLlama,
// so its NEEDED libllama / libggml resolve to the instances already loaded.
#pragma once

#include <cstdint>
#include <vector>

#include "ref/libllama.h"
#include "ref/reference.h"

namespace strix::ref {

class LibLlamaCommon {
 public:
  // The process-wide instance; the first call loads LibLlama and then the library. Throws Error when absent.
  static const LibLlamaCommon& get();

  using Seqs = std::vector<std::vector<int32_t>>;
  // common_reasoning_budget_init(vocab, start_seqs, end_seqs, forced_tokens, budget, initial_state): a
  // llama_sampler (free it with LibLlama::sampler_free). vocab may be null (no UTF-8 check).
  llama_abi::Sampler* (*reasoning_budget_init)(const llama_abi::Vocab* vocab, const Seqs& start_seqs,
                                               const Seqs& end_seqs, const std::vector<int32_t>& forced_tokens,
                                               int32_t budget, int32_t initial_state);
  // common_reasoning_budget_get_state (the enum as int: idle, counting, forcing, waiting-utf8, done).
  int32_t (*reasoning_budget_get_state)(const llama_abi::Sampler* smpl);
  // common_reasoning_budget_force: counting -> forcing; false in any other state.
  bool (*reasoning_budget_force)(llama_abi::Sampler* smpl);
  // common_reasoning_budget_get_end_match: the end sequence that led to done, or null.
  const std::vector<int32_t>* (*reasoning_budget_get_end_match)(const llama_abi::Sampler* smpl);

 private:
  LibLlamaCommon();
  SharedLib lib_;
};

}  // namespace strix::ref
