// The model's tokenizer.ggml.suppress_tokens: token ids a model says must never
// be sampled. libllama loads them with the vocabulary
// (llama_vocab_get_suppress_tokens) and common_sampler gives each a -inf logit
// bias; Strix's Sampler does the same from Params::suppress_tokens.
#pragma once

#include <cstdint>
#include <vector>

namespace strix {
class GgufFile;
}

namespace strix::sampling {

// The ids in file order (empty when the key is absent); ids outside
// [0, n_vocab) are dropped, as libllama drops them. Throws strix::Error naming
// the key when it is not an array of int32 (libllama refuses such a model).
std::vector<int32_t> load_suppress_tokens(const GgufFile& file, int32_t n_vocab);

}  // namespace strix::sampling
