// llama.cpp's generic tool-call format (common_chat_parse_generic), used for
// templates with no native call syntax (Gemma 3, for one): the whole reply is
// one JSON object, {"tool_call": {"name", "arguments"}}, {"tool_calls": [...]}
// or {"response": ...}. Anything else is plain content.
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

// {"tool_call": CALL} or {"tool_calls": [CALL, ...]} as the only key: what
// the generic grammar writes, read incrementally so calls stream. kInvalid
// also covers any other object (the whole-object reading below decides it).
Block streamed_calls(std::string_view text, size_t b, size_t* end, std::vector<FoundCall>* calls) {
  size_t i = skip_ws(text, b + 1);
  ojson key;
  if (Block r = take_json(text, &i, &key); r != Block::kComplete) return r;
  if (!key.is_string() || (key != "tool_call" && key != "tool_calls")) return Block::kInvalid;
  i = skip_ws(text, i);
  if (i >= text.size()) return Block::kIncomplete;
  if (text[i] != ':') return Block::kInvalid;
  ++i;
  if (key == "tool_calls") {
    if (Block r = take_call_array(text, &i, {"arguments"}, calls); r != Block::kComplete) return r;
  } else {
    FoundCall call;
    bool named = false;
    const Block r = take_call_object(text, &i, {"arguments"}, /*type_function=*/false, &call, &named);
    if (r == Block::kIncomplete && named) calls->push_back(std::move(call));
    if (r != Block::kComplete) return r;
    calls->push_back(std::move(call));
  }
  i = skip_ws(text, i);
  if (i >= text.size()) return Block::kIncomplete;
  if (text[i] != '}') return Block::kInvalid;
  *end = i + 1;
  return Block::kComplete;
}

// {"response": "TEXT" ...} still being written: the part of TEXT whose
// characters are whole, so a plain answer streams as content (llama.cpp
// streams the response string too). False when the reply is not that.
bool partial_response(std::string_view text, size_t b, std::string* out) {
  size_t i = skip_ws(text, b + 1);
  ojson key;
  if (take_json(text, &i, &key) != Block::kComplete || key != "response") return false;
  i = skip_ws(text, i);
  if (i >= text.size() || text[i] != ':') return false;
  i = skip_ws(text, i + 1);
  if (i >= text.size() || text[i] != '"') return false;
  size_t end = 0;
  const JsonScan r = scan_json(text, i, &end);
  if (r == JsonScan::kInvalid) return false;
  // Whole, or cut back to a whole character (an escape, a UTF-8 sequence or a surrogate pair).
  const std::string_view body = r == JsonScan::kComplete ? text.substr(i, end - i - 1) : text.substr(i);
  for (size_t cut = 0; cut <= 12 && cut < body.size(); ++cut) {
    std::string t(body.substr(0, body.size() - cut));
    t += '"';
    ojson v;
    if (parse_json(t, &v) && v.is_string()) {
      *out = v.get<std::string>();
      return true;
    }
  }
  return true;
}

// The old-style reading of a whole object: calls under "tool_calls" (a
// non-empty array) or "tool_call", else a "response".
bool whole_object_calls(const ojson& v, std::vector<FoundCall>* calls, bool* response) {
  const auto one = [&](const ojson& item) {
    const std::string text = item.dump();
    size_t pos = 0;
    FoundCall c;
    bool named = false;
    if (take_call_object(text, &pos, {"arguments"}, false, &c, &named) != Block::kComplete) return false;
    calls->push_back(std::move(c));
    return true;
  };
  if (v.contains("tool_calls") && v["tool_calls"].is_array() && !v["tool_calls"].empty()) {
    for (const ojson& item : v["tool_calls"]) {
      if (!one(item)) return false;
    }
    return true;
  }
  if (v.contains("tool_call")) return one(v["tool_call"]);
  *response = v.contains("response");
  return false;
}

}  // namespace

void parse_generic(std::string_view text, MessageBuilder& out) {
  const size_t b = skip_ws(text, 0);
  if (b >= text.size() || text[b] != '{') {
    out.add_content(text);
    return;
  }
  size_t end = b;
  std::vector<FoundCall> calls;
  const Block s = streamed_calls(text, b, &end, &calls);
  if (s == Block::kComplete) {
    add_calls(calls, out);
    out.add_content(text.substr(end));
    return;
  }
  if (s == Block::kIncomplete && out.partial()) {
    add_calls(calls, out);  // nothing, or the calls so far
    return;
  }
  calls.clear();
  end = b;
  ojson v;
  const Block r = take_json(text, &end, &v);
  if (r == Block::kIncomplete && out.partial()) {
    if (std::string answer; partial_response(text, b, &answer)) out.add_content(answer);
    return;
  }
  if (r != Block::kComplete) {
    out.add_content(text);
    return;
  }
  bool response = false;
  if (whole_object_calls(v, &calls, &response)) {
    add_calls(calls, out);
    out.add_content(text.substr(end));
    return;
  }
  if (response) {
    const ojson& resp = v["response"];
    out.add_content(resp.is_string() ? resp.get<std::string>() : resp.dump(2));
    out.add_content(text.substr(end));
    return;
  }
  out.add_content(text);
}

}  // namespace strix::chat::detail
