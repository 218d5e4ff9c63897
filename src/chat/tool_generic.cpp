// llama.cpp's generic tool-call format (common_chat_parse_generic), used for
// templates with tools but no native call syntax: the whole reply is one JSON
// object, {"tool_call": {"name", "arguments"}}, {"tool_calls": [...]} or
// {"response": ...}. Anything else is plain content.
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

bool call_from_object(const ojson& v, FoundCall* call) {
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return false;
  call->name = v["name"].get<std::string>();
  if (call->name.empty()) return false;
  if (v.contains("id") && v["id"].is_string()) call->id = v["id"].get<std::string>();
  return arguments_object(v.value("arguments", ojson()), &call->arguments);
}

}  // namespace

void parse_generic(std::string_view text, MessageBuilder& out) {
  const size_t b = skip_ws(text, 0);
  if (b >= text.size() || text[b] != '{') {
    out.add_content(text);
    return;
  }
  size_t end = b;
  ojson v;
  const Block r = take_json(text, &end, &v);
  if (r == Block::kIncomplete && out.partial()) return;
  if (r != Block::kComplete) {
    out.add_content(text);
    return;
  }
  std::vector<FoundCall> calls;
  bool ok = false;
  if (v.contains("tool_calls") && v["tool_calls"].is_array() && !v["tool_calls"].empty()) {
    ok = true;
    for (const ojson& item : v["tool_calls"]) {
      FoundCall c;
      ok = ok && call_from_object(item, &c);
      calls.push_back(std::move(c));
    }
  } else if (v.contains("tool_call")) {
    FoundCall c;
    ok = call_from_object(v["tool_call"], &c);
    calls.push_back(std::move(c));
  } else if (v.contains("response")) {
    const ojson& resp = v["response"];
    out.add_content(resp.is_string() ? resp.get<std::string>() : resp.dump(2));
    out.add_content(text.substr(end));
    return;
  }
  if (!ok) {
    out.add_content(text);
    return;
  }
  for (FoundCall& c : calls) out.add_tool_call(std::move(c.name), std::move(c.id), c.arguments);
  out.add_content(text.substr(end));
}

}  // namespace strix::chat::detail
