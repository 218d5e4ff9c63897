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
  // tmpl: Jinja source, or the name of a llama.cpp built-in format
  // (chat/builtin_templates.h; rendered without Jinja, kwargs unused);
  // bos/eos: the token texts the template may print; kwargs_json: a JSON
  // object of extra template variables (may be empty). enable_thinking is
  // passed to Jinja templates as llama.cpp does (false for --reasoning-budget
  // 0) unless kwargs_json sets it; when it ends up false and the rendering
  // ends with an opened "<think>\n", "</think>" closes it, as llama.cpp's
  // chat-format handlers do.
  ChatHistory(std::string tmpl, std::string bos, std::string eos, const std::string& kwargs_json,
              bool enable_thinking = true);

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
  bool builtin_ = false;  // tmpl_ names a built-in format
  bool enable_thinking_ = true;
  std::vector<std::pair<std::string, std::string>> msgs_;
};

// The Jinja source of llama.cpp's chatml template for `name` == "chatml"
// (llama.cpp's Jinja mode knows that one name), "" otherwise. The other
// built-in names render through chat/builtin_templates.h.
std::string builtin_chat_template(const std::string& name);

}  // namespace strix::cli
