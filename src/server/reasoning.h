// The reasoning budget of chat requests, as llama-server sets it up: the
// server's --reasoning-budget / --reasoning-budget-message are the defaults; a
// request's reasoning_budget_tokens (else thinking_budget_tokens) and
// reasoning_budget_message override them (-1 keeps the server's budget). For a
// template with <think> blocks the budget sampler counts the tokens of a block
// and forces message + "</think>" when they are spent (sampling/think_budget.h),
// primed by the plan's generation prompt so a prompt that opens the block
// counts from the first token. A budget of 0 also renders the template with
// enable_thinking = false (as `strix run --reasoning-budget 0` does) unless the
// request's chat_template_kwargs set enable_thinking itself.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sampling/sampler.h"
#include "server/chat_io.h"

namespace strix::server {

struct ThinkBudget {
  int32_t budget = -1;  // -1 unlimited, 0 no thinking, N > 0 tokens per thinking block
  std::string message;  // forced before "</think>" when the budget is spent
};

// The request fields reasoning_budget() reads (for check_fields).
extern const std::initializer_list<std::string_view> kReasoningFields;

// The request's budget over the server's default `d` (a 400 naming a field below -1 or of the wrong type).
ThinkBudget reasoning_budget(const nlohmann::json& b, const ThinkBudget& d);

// Anthropic's `thinking` object: {"type": "disabled"} is a budget of 0,
// {"type": "enabled", "budget_tokens": N} a budget of N, which Anthropic wants
// >= 1024 and below max_tokens (a 400 otherwise, as its API answers).
ThinkBudget anthropic_thinking(const nlohmann::json& thinking, int64_t max_tokens, const ThinkBudget& d);

// Before plan_chat: unless the request's kwargs set enable_thinking, the
// server's --reasoning on / off sets it (env.reasoning 1 / 0, as llama-server's
// default_template_kwargs), else a budget of 0 sets it false; enable_thinking
// given as anything but a boolean is a 400 (llama-server's check).
void apply_thinking_switch(ChatCall& call, const ThinkBudget& t, const ChatEnv& env);

// --reasoning's value as llama.cpp's common/arg.cpp reads it: on / enabled /
// true / 1 -> 1, off / disabled / false / 0 -> 0, auto / -1 -> -1; anything
// else throws strix::Error.
int parse_reasoning_switch(const std::string& value);

// After plan_chat: the budget sampler's tags, forced sequence and generation
// prompt, when the template has <think> blocks (nothing otherwise).
void apply_think_budget(sampling::Params& p, const ChatEnv& env, const ChatPlan& plan, const ThinkBudget& t);

}  // namespace strix::server
