// The reasoning budget configured from a chat template, as llama.cpp's chat
// layer does for templates with <think> ... </think> blocks (the thinking
// start and end tags of common_chat_params): the start tag opens the counted
// block, the end tag closes it, and `message` + end tag is what is forced once
// the budget is spent. Shared by `strix run` and `strix serve`.
//
//   if (sampling::template_thinks(tmpl)) sampling::set_think_budget(params, tk, 16, "");
#pragma once

#include <cstdint>
#include <string>

#include "sampling/sampler.h"

namespace strix::tok {
class Tokenizer;
}

namespace strix::sampling {

inline constexpr const char* kThinkOpen = "<think>";
inline constexpr const char* kThinkClose = "</think>";

// Whether a chat template writes <think> blocks (the only thinking tags Strix configures a budget for).
bool template_thinks(const std::string& tmpl);

// Params' reasoning_budget_* for the <think> tags: budget >= 0 tokens inside a
// block (0: the end tag is forced as soon as a block opens), -1 unlimited
// (the fields stay set, the sampler then only watches).
void set_think_budget(Params& p, const tok::Tokenizer& tk, int32_t budget, const std::string& message);

}  // namespace strix::sampling
