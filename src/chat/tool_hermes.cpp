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
  std::string_view close;
  if (index == 0) {
    pos += kToolCall.size();
    close = "</tool_call>";
    bool streamable = false;
    const Block r =
        take_call_object(text, &pos, {"arguments", "parameters"}, /*type_function=*/false, &call, &streamable);
    if (r == Block::kIncomplete && streamable) calls->push_back(std::move(call));
    if (r != Block::kComplete) return r;
  } else {
    pos += kFunction.size();
    close = "</function>";
    const size_t gt = text.find('>', pos);
    if (gt == std::string_view::npos) {
      return text.find_first_of("<\n", pos) == std::string_view::npos ? Block::kIncomplete : Block::kInvalid;
    }
    call.name = std::string(text.substr(pos, gt - pos));
    if (call.name.empty() || call.name.find_first_of("<\n \"") != std::string::npos) return Block::kInvalid;
    pos = gt + 1;
    const Block r = take_arguments(text, &pos, &call);
    if (r == Block::kIncomplete) calls->push_back(std::move(call));  // the name is certain at '>'
    if (r != Block::kComplete) return r;
  }
  calls->push_back(std::move(call));
  // A complete call whose closing tag is still to come streams too.
  return close_tag(text, pos, close, partial, end);
}

}  // namespace

void parse_hermes(std::string_view text, MessageBuilder& out) {
  parse_blocks(text, {kToolCall, kFunction}, &hermes_block, out);
}

}  // namespace strix::chat::detail
