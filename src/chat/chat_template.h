// Chat templates: render a model's Jinja2 chat template the way Hugging Face
// transformers' apply_chat_template does (jinja2 ImmutableSandboxedEnvironment,
// trim_blocks + lstrip_blocks, loopcontrols, HF's tojson / raise_exception /
// strftime_now), byte for byte.
//
// Determinism: strftime_now reads the clock; when the environment variable
// STRIX_FIXED_DATE is set ("YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS") that date is
// used instead (tests set it, and tests/chat/jinja_ref.py honours the same one).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace strix::chat {

struct ChatInputs {
  jinja::Value messages;                   // list of message dicts (parse_json of the request)
  jinja::Value tools = jinja::Value::none();  // list of tool schemas or None, as HF passes it
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;
  std::vector<std::pair<std::string, jinja::Value>> kwargs;  // extra context (enable_thinking, ...)
};

// Renders `tmpl` over `in`. Throws jinja::TemplateError where jinja2 would raise
// (raise_exception, undefined access, type errors), strix::Error on syntax
// errors and strix::Refusal on constructs Strix does not implement.
std::string apply_chat_template(const std::string& tmpl, const ChatInputs& in);

}  // namespace strix::chat
