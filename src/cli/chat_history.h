// The messages of a CLI conversation and the text each new message adds, the
// way llama.cpp's common_chat_format_single computes it: render the history
// without the new message, render it with the message (and the assistant
// prefix when the message is the user's), feed only the difference. A
// newline is put back first when the old rendering ended in one, because the
// model's end-of-turn token (already in the KV cache) replaced the template's
// end marker but not the newline after it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace strix::cli {

class ChatHistory {
 public:
  // tmpl: Jinja source; bos/eos: the token texts the template may print;
  // kwargs_json: a JSON object of extra template variables (may be empty).
  ChatHistory(std::string tmpl, std::string bos, std::string eos, const std::string& kwargs_json);

  // Renders all messages (llama.cpp's common_chat_templates_apply).
  std::string render(bool add_generation_prompt) const;
  // Appends a message and returns the text it adds (common_chat_format_single
  // with add_ass = role == "user").
  std::string add_and_format(const std::string& role, const std::string& content);
  // Appends without rendering.
  void add(const std::string& role, const std::string& content) { msgs_.emplace_back(role, content); }
  bool empty() const { return msgs_.empty(); }

 private:
  std::string render_msgs(const std::vector<std::pair<std::string, std::string>>& msgs, bool add_gen) const;

  std::string tmpl_, bos_, eos_, kwargs_json_;
  std::vector<std::pair<std::string, std::string>> msgs_;
};

// Built-in template names accepted by --chat-template (llama.cpp has many;
// Strix has chatml). Returns the Jinja source, or "" when `name` is not one.
std::string builtin_chat_template(const std::string& name);

}  // namespace strix::cli
