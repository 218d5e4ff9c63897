// Llama 3.1 / 3.2 / 3.3 tool calls, as llama.cpp's common_chat_parse_llama_3_1
// reads them: a reply that starts with the JSON object
//   {"name": "f", "parameters": {...}}   ("type": "function" may lead)
// is a call (text after it is content), and <|python_tag|> starts a builtin
// call `name.call(key=JSON, ...)` or, for anything else, raw code for the
// "python" tool ({"code": ...}).
#include <cctype>

#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A JSON call object still being generated could be a call while its first
// key is (a prefix of) "name" or "type".
bool may_be_call(std::string_view text, size_t brace) {
  const std::string_view key = text.substr(skip_ws(text, brace + 1));
  for (std::string_view k : {"\"name\"", "\"type\""}) {
    if (key.substr(0, k.size()) == k.substr(0, std::min(k.size(), key.size()))) return true;
  }
  return false;
}

// <|python_tag|>name.call(a=1, b="x")  -> true with the call filled.
bool builtin_call(std::string_view code, std::string* name_out, ojson* args_out) {
  size_t i = skip_ws(code, 0), b = i;
  while (i < code.size() && is_word(code[i])) ++i;
  if (i == b) return false;
  std::string name(code.substr(b, i - b));
  if (expect_lit(code, &i, ".call(") != Lit::kOk) return false;
  ojson args = ojson::object();
  i = skip_ws(code, i);
  while (i < code.size() && code[i] != ')') {
    const size_t kb = i;
    while (i < code.size() && is_word(code[i])) ++i;
    if (i == kb) return false;
    const std::string key(code.substr(kb, i - kb));
    i = skip_ws(code, i);
    if (expect_lit(code, &i, "=") != Lit::kOk) return false;
    ojson v;
    if (take_json(code, &i, &v) != Block::kComplete) return false;
    args[key] = std::move(v);
    i = skip_ws(code, i);
    if (i < code.size() && code[i] == ',') i = skip_ws(code, i + 1);
  }
  if (i >= code.size() || !trim(code.substr(i + 1)).empty()) return false;
  *name_out = std::move(name);
  *args_out = std::move(args);
  return true;
}

}  // namespace

void parse_llama3(std::string_view text, MessageBuilder& out) {
  size_t pos = 0;
  const size_t b = skip_ws(text, 0);
  if (b < text.size() && text[b] == '{') {
    size_t end = b;
    FoundCall call;
    bool named = false;
    const Block r = take_call_object(text, &end, {"parameters", "arguments"}, /*type_function=*/true, &call, &named);
    if (r == Block::kIncomplete && out.partial()) {
      // A JSON reply is a call once its parameters object has begun after
      // the name; before that it may still be a plain JSON answer: hold it.
      if (named && !call.arguments.empty()) out.add_partial_call(std::move(call.name), "", std::move(call.arguments));
      if (named || may_be_call(text, b)) return;
    }
    if (r == Block::kComplete) {
      out.add_tool_call_text(std::move(call.name), "", std::move(call.arguments));
      pos = end;
    }
  }
  const size_t tag = text.find(kPythonTag, pos);
  if (tag == std::string_view::npos) {
    const size_t held = out.partial() ? partial_marker_at_end(text.substr(pos), kPythonTag) : std::string_view::npos;
    out.add_content(text.substr(pos, held));
    return;
  }
  out.add_content(text.substr(pos, tag - pos));
  if (out.partial()) return;  // the code runs to the end of the reply
  const std::string_view code = text.substr(tag + kPythonTag.size());
  std::string name;
  ojson args;
  if (builtin_call(code, &name, &args)) {
    out.add_tool_call(std::move(name), "", args);
  } else {
    out.add_tool_call("python", "", ojson{{"code", std::string(code)}});
  }
}

}  // namespace strix::chat::detail
