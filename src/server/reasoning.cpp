#include "server/reasoning.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "sampling/think_budget.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace strix::server {

const std::initializer_list<std::string_view> kReasoningFields = {"reasoning_budget_tokens", "thinking_budget_tokens",
                                                                  "reasoning_budget_message"};

namespace {

int32_t budget_field(const nlohmann::json& b, const char* key) {
  const int64_t v = get_int(b, key, -1);
  if (v < -1 || v > INT32_MAX) {
    throw ApiError(400, std::string("'") + key + "' must be -1 (unlimited), 0 (no thinking) or a token count", key);
  }
  return static_cast<int32_t>(v);
}

}  // namespace

ThinkBudget reasoning_budget(const nlohmann::json& b, const ThinkBudget& d) {
  ThinkBudget t = d;
  // llama-server: reasoning_budget_tokens, else thinking_budget_tokens; -1 keeps the server's budget
  int32_t v = budget_field(b, "reasoning_budget_tokens");
  if (v == -1) v = budget_field(b, "thinking_budget_tokens");
  if (v != -1) t.budget = v;
  t.message = get_string(b, "reasoning_budget_message", d.message);
  return t;
}

ThinkBudget anthropic_thinking(const nlohmann::json& thinking, int64_t max_tokens, const ThinkBudget& d) {
  if (!thinking.is_object()) throw ApiError(400, "thinking: must be an object", "thinking");
  const std::string type = get_string(thinking, "type", "");
  ThinkBudget t = d;
  if (type == "disabled") {
    check_fields(thinking, {"type"}, {}, "thinking.");
    t.budget = 0;
    return t;
  }
  if (type != "enabled") {
    throw ApiError(400, "thinking.type: must be enabled or disabled (other kinds are not implemented)",
                   "thinking.type");
  }
  check_fields(thinking, {"type", "budget_tokens"}, {}, "thinking.");
  if (!has_field(thinking, "budget_tokens")) {
    throw ApiError(400, "thinking.enabled.budget_tokens: Field required", "thinking.budget_tokens");
  }
  const int64_t n = get_int(thinking, "budget_tokens", 0);
  if (n < 1024) {
    throw ApiError(400, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
                   "thinking.budget_tokens");
  }
  if (n >= max_tokens) {
    throw ApiError(400, "`max_tokens` must be greater than `thinking.budget_tokens`", "thinking.budget_tokens");
  }
  t.budget = static_cast<int32_t>(std::min<int64_t>(n, INT32_MAX));
  return t;
}

int parse_reasoning_switch(const std::string& v) {
  if (v == "on" || v == "enabled" || v == "true" || v == "1") return 1;
  if (v == "off" || v == "disabled" || v == "false" || v == "0") return 0;
  if (v == "auto" || v == "-1") return -1;
  throw Error("--reasoning: unknown value '" + v + "' (on, off or auto)");
}

void apply_thinking_switch(ChatCall& call, const ThinkBudget& t, const ChatEnv& env) {
  const auto it = call.template_kwargs.find("enable_thinking");
  if (it != call.template_kwargs.end()) {
    if (!it->is_boolean()) {
      throw ApiError(400, "'chat_template_kwargs.enable_thinking' must be a boolean",
                     "chat_template_kwargs.enable_thinking");
    }
    return;
  }
  if (env.reasoning >= 0) {
    call.template_kwargs["enable_thinking"] = env.reasoning == 1;
  } else if (t.budget == 0) {
    call.template_kwargs["enable_thinking"] = false;
  }
}

void apply_think_budget(sampling::Params& p, const ChatEnv& env, const ChatPlan& plan, const ThinkBudget& t) {
  if (!sampling::template_thinks(env.tmpl)) return;
  sampling::set_think_budget(p, *env.tk, t.budget, t.message);
  p.generation_prompt = plan.generation_prompt;
}

}  // namespace strix::server
