// OpenAI chat requests as a ChatCall (shared by /v1/chat/completions and
// /apply-template): messages (string or text-part content, assistant
// tool_calls, role "tool" replies), tools, tool_choice, parallel_tool_calls
// and llama-server's chat_template_kwargs.
#pragma once

#include <nlohmann/json.hpp>

#include "server/chat_io.h"

namespace strix::server {

ChatCall openai_chat_call(const nlohmann::json& b);

}  // namespace strix::server
