// llama.cpp's built-in chat formats (the names `--chat-template NAME` and
// llama_chat_apply_template accept: chatml, llama2, llama3, gemma, ...), written
// for Strix from the formats of the pinned libllama (src/llama-chat.cpp facts;
// the newest names checked against the library itself). They are plain string
// concatenations over (role, content) pairs, no Jinja: llama.cpp uses them for
// --no-jinja and as named shortcuts.
//
//   std::vector<chat::BuiltinMessage> msgs = {{"system", "Be brief."}, {"user", "Hi"}};
//   if (chat::is_builtin_template("llama3"))
//     std::string prompt = chat::apply_builtin_template("llama3", msgs, /*add_assistant=*/true);
//
// tests/chat/builtin_templates_test.cpp renders every name the pinned libllama
// lists through both and requires the same bytes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct BuiltinMessage {
  std::string role;
  std::string content;
};

// Every built-in name, sorted as llama_chat_builtin_templates lists them.
const std::vector<std::string>& builtin_template_names();

bool is_builtin_template(std::string_view name);

// llama.cpp's guess of the built-in format a Jinja template's source is
// written for (what --no-jinja and llama_chat_apply_template do with a
// template that is not a name): a format name for apply_builtin_template, or
// "" when no marker matches. May return "dots1", a format libllama reaches
// only this way (not in builtin_template_names). Markers of the formats added
// last (deepseek-ocr, exaone-moe, granite-4.x, hunyuan-vl, solar-open) are not
// known to Strix: such templates come back "" and must be named instead.
std::string detect_builtin_template(const std::string& tmpl);

// apply_builtin_template knows `name` (a listed name or "dots1").
bool has_builtin_renderer(std::string_view name);

// Renders msgs in the named format (a listed name or "dots1"); add_assistant opens the assistant's turn
// where the format has such a prefix (some formats never add one, as in
// llama.cpp). Throws strix::Error naming an unknown format.
std::string apply_builtin_template(std::string_view name, const std::vector<BuiltinMessage>& msgs, bool add_assistant);

}  // namespace strix::chat
