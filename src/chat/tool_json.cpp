// Canonical JSON text for tool-call arguments, written left to right so that
// what a prefix of the model's text yields is a prefix of what the whole text
// yields (streamed argument fragments then add up to the final arguments),
// and the call-object readers the JSON-shaped formats share (Hermes, Llama 3,
// Mistral, generic).
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

// The longest escape run a whole character can need: a surrogate pair is two
// \uXXXX escapes; cutting back this far always reaches a character boundary.
constexpr size_t kLongestChar = 12;

// A string token at s[i] == '"'. Complete: its dump(). Incomplete: the
// dump() of its whole characters so far, without the closing quote (dump()
// escapes character by character, so that is a prefix of the final text).
JsonScan canonical_string(std::string_view s, size_t i, std::string* out, size_t* end) {
  size_t j = 0;
  const JsonScan r = scan_json(s, i, &j);
  if (r == JsonScan::kInvalid) return r;
  ojson v;
  if (r == JsonScan::kComplete) {
    if (!parse_json(s.substr(i, j - i), &v) || !v.is_string()) return JsonScan::kInvalid;
    *out += v.dump();
    *end = j;
    return JsonScan::kComplete;
  }
  const std::string_view body = s.substr(i);
  for (size_t cut = 0; cut <= kLongestChar && cut < body.size(); ++cut) {
    std::string t(body.substr(0, body.size() - cut));
    t += '"';
    if (parse_json(t, &v) && v.is_string()) {
      std::string d = v.dump();
      d.pop_back();
      *out += d;
      break;
    }
  }
  return JsonScan::kIncomplete;
}

// A number or literal at s[i]: written once it is whole (a number at the end
// of the text may still grow).
JsonScan canonical_scalar(std::string_view s, size_t i, std::string* out, size_t* end) {
  size_t j = 0;
  const JsonScan r = scan_json(s, i, &j);
  if (r != JsonScan::kComplete) return r;
  ojson v;
  if (!parse_json(s.substr(i, j - i), &v)) return JsonScan::kInvalid;
  *out += v.dump();
  *end = j;
  return JsonScan::kComplete;
}

}  // namespace

JsonScan canonical_token(std::string_view s, size_t i, std::string* out, size_t* end) {
  return s[i] == '"' ? canonical_string(s, i, out, end) : canonical_scalar(s, i, out, end);
}

Block take_arguments(std::string_view s, size_t* pos, FoundCall* call) {
  const size_t b = skip_ws(s, *pos);
  if (b >= s.size()) {
    call->arguments.clear();
    call->complete = false;
    return Block::kIncomplete;
  }
  if (s[b] != '{') return Block::kInvalid;
  std::string text;
  size_t end = 0;
  switch (canonical_json(s, b, &text, &end)) {
    case JsonScan::kInvalid:
      return Block::kInvalid;
    case JsonScan::kIncomplete:
      call->arguments = std::move(text);
      call->complete = false;
      return Block::kIncomplete;
    case JsonScan::kComplete:
      break;
  }
  call->arguments = std::move(text);
  call->complete = true;
  *pos = end;
  return Block::kComplete;
}

namespace {

bool is_args_key(const std::string& key, const std::vector<std::string_view>& args_keys) {
  for (std::string_view k : args_keys) {
    if (key == k) return true;
  }
  return false;
}

// A JSON value at s[*pos]: kComplete parses it into *v and advances *pos.
Block take_value(std::string_view s, size_t* pos, ojson* v) {
  size_t p = skip_ws(s, *pos);
  const Block r = take_json(s, &p, v);
  if (r == Block::kComplete) *pos = p;
  return r;
}

// Arguments stringified by the model: the string must hold exactly one object.
bool arguments_from_string(const std::string& text, std::string* out) {
  const size_t b = skip_ws(text, 0);
  if (b >= text.size() || text[b] != '{') return false;
  size_t end = 0;
  std::string canon;
  if (canonical_json(text, b, &canon, &end) != JsonScan::kComplete) return false;
  if (skip_ws(text, end) != text.size()) return false;
  *out = std::move(canon);
  return true;
}

}  // namespace

Block take_call_object(std::string_view s, size_t* pos, const std::vector<std::string_view>& args_keys,
                       bool type_function, FoundCall* call, bool* streamable) {
  *streamable = false;
  *call = FoundCall{};
  bool have_name = false, have_args = false;
  const auto incomplete = [&]() {
    *streamable = have_name;
    call->complete = false;
    return Block::kIncomplete;
  };
  size_t i = skip_ws(s, *pos);
  if (i >= s.size()) return incomplete();
  if (s[i] != '{') return Block::kInvalid;
  i = skip_ws(s, i + 1);
  if (i < s.size() && s[i] == '}') return Block::kInvalid;  // {} names no function
  while (true) {
    i = skip_ws(s, i);
    if (i >= s.size()) return incomplete();
    if (s[i] != '"') return Block::kInvalid;
    ojson key;
    if (Block r = take_value(s, &i, &key); r != Block::kComplete) return r == Block::kIncomplete ? incomplete() : r;
    if (!key.is_string()) return Block::kInvalid;
    const std::string k = key.get<std::string>();
    i = skip_ws(s, i);
    if (i >= s.size()) return incomplete();
    if (s[i] != ':') return Block::kInvalid;
    i = skip_ws(s, i + 1);
    if (i >= s.size()) return incomplete();
    if (is_args_key(k, args_keys)) {
      if (have_args) return Block::kInvalid;
      if (s[i] == '"') {
        ojson v;
        if (Block r = take_value(s, &i, &v); r != Block::kComplete) return r == Block::kIncomplete ? incomplete() : r;
        if (!arguments_from_string(v.get<std::string>(), &call->arguments)) return Block::kInvalid;
      } else {
        FoundCall args;
        const Block r = take_arguments(s, &i, &args);
        if (r == Block::kInvalid) return r;
        call->arguments = std::move(args.arguments);
        if (r == Block::kIncomplete) return incomplete();
      }
      have_args = true;
    } else {
      ojson v;
      if (Block r = take_value(s, &i, &v); r != Block::kComplete) return r == Block::kIncomplete ? incomplete() : r;
      if (k == "name") {
        if (have_name || !v.is_string() || v.get<std::string>().empty()) return Block::kInvalid;
        call->name = v.get<std::string>();
        have_name = true;
      } else if (k == "id") {
        if (v.is_string()) call->id = v.get<std::string>();
      } else if (k == "type" && type_function && v != "function") {
        return Block::kInvalid;
      }
    }
    i = skip_ws(s, i);
    if (i >= s.size()) return incomplete();
    if (s[i] == ',') {
      ++i;
      continue;
    }
    if (s[i] != '}') return Block::kInvalid;
    if (!have_name || !have_args) return Block::kInvalid;
    *pos = i + 1;
    call->complete = true;
    return Block::kComplete;
  }
}

Block take_call_array(std::string_view s, size_t* pos, const std::vector<std::string_view>& args_keys,
                      std::vector<FoundCall>* calls) {
  size_t i = skip_ws(s, *pos);
  if (i >= s.size()) return Block::kIncomplete;
  if (s[i] != '[') return Block::kInvalid;
  ++i;
  while (true) {
    FoundCall call;
    bool streamable = false;
    const Block r = take_call_object(s, &i, args_keys, /*type_function=*/false, &call, &streamable);
    if (r == Block::kInvalid) return r;
    if (r == Block::kIncomplete) {
      if (streamable) calls->push_back(std::move(call));
      return r;
    }
    calls->push_back(std::move(call));
    i = skip_ws(s, i);
    if (i >= s.size()) return Block::kIncomplete;
    if (s[i] == ']') {
      *pos = i + 1;
      return Block::kComplete;
    }
    if (s[i] != ',') return Block::kInvalid;
    ++i;
  }
}

void add_calls(std::vector<FoundCall>& calls, MessageBuilder& out) {
  for (FoundCall& c : calls) {
    if (c.complete) {
      out.add_tool_call_text(std::move(c.name), std::move(c.id), std::move(c.arguments));
    } else {
      out.add_partial_call(std::move(c.name), std::move(c.id), std::move(c.arguments));
    }
  }
}

}  // namespace strix::chat::detail
