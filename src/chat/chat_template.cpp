// HF-compatible chat template rendering on top of the Jinja interpreter.
#include "chat/chat_template.h"

#include <cstdlib>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"

namespace strix::chat {

std::string apply_chat_template(const std::string& tmpl, const ChatInputs& in) {
  jinja::Body body = jinja::parse_template(tmpl);
  jinja::RenderOptions opt;
  if (const char* fixed = std::getenv("STRIX_FIXED_DATE")) opt.fixed_date = fixed;
  // Context as transformers' render_jinja_template builds it: messages, tools,
  // documents, add_generation_prompt, then the special tokens and kwargs.
  std::vector<std::pair<std::string, jinja::Value>> ctx = {
      {"messages", in.messages},
      {"tools", in.tools},
      {"documents", jinja::Value::none()},
      {"add_generation_prompt", jinja::Value::boolean(in.add_generation_prompt)},
      {"bos_token", jinja::Value::string(in.bos_token)},
      {"eos_token", jinja::Value::string(in.eos_token)},
  };
  for (const auto& kv : in.kwargs) {
    bool replaced = false;
    for (auto& c : ctx)
      if (c.first == kv.first) { c.second = kv.second; replaced = true; }
    if (!replaced) ctx.push_back(kv);
  }
  return jinja::render(body, ctx, opt);
}

}  // namespace strix::chat
