// llama.cpp's generic tool-call prompt for templates that cannot render
// tools themselves (Gemma's, for one). llama.cpp renders templates with minja,
// whose chat_template probes what a template renders (a system message,
// tools, an assistant message with tool_calls, a tool result) and, for what
// it cannot, rewrites the messages before rendering ("polyfills"):
//  - tools: a system text "You can call any of the following tools to satisfy
//    the user's requests: " + the tools as JSON (indent 2) + an example call
//    (the template's own rendering of a polyfilled call, see below);
//  - an assistant message's tool_calls: content {"tool_calls": [{name,
//    arguments, id}], "content"?} as JSON (indent 2);
//  - a tool result: a user message {"tool_response": {tool?, content,
//    tool_call_id?}} as JSON (indent 2);
//  - a system message on a template without a system role: merged into the
//    next user message.
// The generic format also adds its own system line first (kGenericSystem).
// Not done: typed (list) content and object-vs-string argument rewriting
// (the server already gives templates arguments as mappings).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace strix::chat {

// What a template renders, probed as minja probes it.
struct TemplateCaps {
  bool supports_system_role = false;
  bool supports_tools = false;
  bool supports_tool_calls = false;
  bool supports_tool_responses = false;
};

// The system line llama.cpp's generic format adds (common_chat_params_init_generic).
extern const char* const kGenericSystem;

// messages with `text` as their system prompt: appended to a leading system
// message after a blank line, else a new system message first (minja's add_system).
nlohmann::ordered_json add_system(const nlohmann::ordered_json& messages, const std::string& text);

class TemplatePolyfill {
 public:
  // Probes `tmpl` (rendered with bos / eos as the template's bos_token /
  // eos_token) and, when it renders no tools, builds the example call.
  TemplatePolyfill(std::string tmpl, std::string bos, std::string eos);

  const TemplateCaps& caps() const { return caps_; }
  const std::string& tool_call_example() const { return example_; }

  // The messages (OpenAI-shaped; tool-call arguments as JSON text or
  // objects) rewritten for what the template cannot render, given the tools
  // that will be passed to it (an empty array: none).
  nlohmann::ordered_json apply(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) const;

  // Renders messages (after apply) and tools through the template.
  std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                     bool add_generation_prompt) const;

 private:
  std::string tmpl_, bos_, eos_;
  TemplateCaps caps_;
  std::string example_;
  std::string try_render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools) const;
};

}  // namespace strix::chat
