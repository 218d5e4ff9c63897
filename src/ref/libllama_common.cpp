#include "ref/libllama_common.h"

namespace strix::ref {

namespace {
constexpr const char* kLibLlamaCommon = "libllama-common.so";
}  // namespace

LibLlamaCommon::LibLlamaCommon() : lib_((LibLlama::get(), reference_dir() + "/" + kLibLlamaCommon)) {
  // Mangled names (nm -D): the signatures are those declared in the header.
  reasoning_budget_init = lib_.fn<decltype(reasoning_budget_init)>(
      "_Z28common_reasoning_budget_initPK11llama_vocabRKSt6vectorIS2_IiSaIiEESaIS4_EES8_RKS4_i29common_reasoning_"
      "budget_state");
  reasoning_budget_get_state =
      lib_.fn<decltype(reasoning_budget_get_state)>("_Z33common_reasoning_budget_get_statePK13llama_sampler");
  reasoning_budget_force =
      lib_.fn<decltype(reasoning_budget_force)>("_Z29common_reasoning_budget_forceP13llama_sampler");
  reasoning_budget_get_end_match =
      lib_.fn<decltype(reasoning_budget_get_end_match)>("_Z37common_reasoning_budget_get_end_matchPK13llama_sampler");
}

const LibLlamaCommon& LibLlamaCommon::get() {
  static const LibLlamaCommon instance;
  return instance;
}

}  // namespace strix::ref
