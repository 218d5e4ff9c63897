// Hermes 2 Pro / Qwen 2.5 / Qwen 3 tool calls, as llama.cpp's
// common_chat_parse_hermes_2_pro reads them:
//   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
// and the <function=f>{...}</function> variant some of these models emit.
// The closing tag may be missing at the very end of a reply (generation
// stopped on the end-of-turn token right after the JSON).
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kFunction = "<function=";

// After the JSON: optional whitespace and the closing tag.
Block close_tag(std::string_view text, size_t pos, std::string_view tag, bool partial, size_t* end) {
  size_t j = skip_ws(text, pos);
  if (j >= text.size()) {
    if (partial) return Block::kIncomplete;
    *end = j;
    return Block::kComplete;
  }
  switch (expect_lit(text, &j, tag)) {
    case Lit::kOk:
      *end = j;
      return Block::kComplete;
    case Lit::kIncomplete:
      if (partial) return Block::kIncomplete;
      return Block::kInvalid;
    case Lit::kMismatch:
      return Block::kInvalid;
  }
  return Block::kInvalid;
}

Block hermes_block(std::string_view text, size_t open, int index, bool partial, size_t* end,
                   std::vector<FoundCall>* calls) {
  FoundCall call;
  size_t pos = open;
  if (index == 0) {
    pos += kToolCall.size();
    ojson v;
    if (Block r = take_json(text, &pos, &v); r != Block::kComplete) return r;
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string()) return Block::kInvalid;
    call.name = v["name"].get<std::string>();
    if (call.name.empty()) return Block::kInvalid;
    const ojson args = v.contains("arguments") ? v["arguments"] : v.value("parameters", ojson());
    if (!arguments_object(args, &call.arguments)) return Block::kInvalid;
    if (v.contains("id") && v["id"].is_string()) call.id = v["id"].get<std::string>();
    if (Block r = close_tag(text, pos, "</tool_call>", partial, end); r != Block::kComplete) return r;
  } else {
    pos += kFunction.size();
    const size_t gt = text.find('>', pos);
    if (gt == std::string_view::npos) {
      return text.find_first_of("<\n", pos) == std::string_view::npos ? Block::kIncomplete : Block::kInvalid;
    }
    call.name = std::string(text.substr(pos, gt - pos));
    if (call.name.empty() || call.name.find_first_of("<\n \"") != std::string::npos) return Block::kInvalid;
    pos = gt + 1;
    ojson v;
    if (Block r = take_json(text, &pos, &v); r != Block::kComplete) return r;
    if (!v.is_object()) return Block::kInvalid;
    call.arguments = std::move(v);
    if (Block r = close_tag(text, pos, "</function>", partial, end); r != Block::kComplete) return r;
  }
  calls->push_back(std::move(call));
  return Block::kComplete;
}

}  // namespace

void parse_hermes(std::string_view text, MessageBuilder& out) {
  parse_blocks(text, {kToolCall, kFunction}, &hermes_block, out);
}

}  // namespace strix::chat::detail
