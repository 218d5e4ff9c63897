// OpenAI logprobs for one sampled token: log-softmax of the model's raw logits
// at that step (before any sampler stage), the sampled token's value and the
// n most likely tokens (ties: lower id first).
#pragma once

#include <cstdint>
#include <span>

#include "server/gen_stream.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t sampled, int32_t n, const tok::Tokenizer& tk);

}  // namespace strix::server
