// Runs batches of Jinja cases through Python's jinja2 (tests/chat/jinja_ref.py,
// Debian /usr/bin/python3 + python3-jinja2) and through Strix, and compares.
#pragma once

#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "chat/jinja_value.h"

namespace strix::test {

struct RenderResult {
  bool ok = false;    // false: the renderer raised
  std::string out;    // rendered text when ok
  std::string error;  // message when !ok
};

// One case: either a plain context (rendered as template.render(**context)) or
// chat inputs (rendered as transformers does).
struct JinjaCase {
  std::string name;
  std::string tmpl;
  jinja::Value context;    // dict, used when !is_chat
  bool is_chat = false;
  chat::ChatInputs chat;
};

bool have_reference();  // /usr/bin/python3 with jinja2 importable
std::vector<RenderResult> render_reference(const std::vector<JinjaCase>& cases);
RenderResult render_strix(const JinjaCase& c);

// "" when both rendered the same bytes or both raised; else a description of
// the first difference (offset and both sides around it).
std::string compare_results(const RenderResult& ref, const RenderResult& ours);

std::string read_text_file(const std::string& path);

}  // namespace strix::test
