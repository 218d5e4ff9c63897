// Mistral tool calls, as llama.cpp's common_chat_parse_mistral_nemo reads them:
//   [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abcdef123"}, ...]
// (arguments may also come stringified), and the later Mistral templates'
//   [TOOL_CALLS]f[ARGS]{...}   (one marker per call; [CALL_ID]id may precede [ARGS]).
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";

bool call_from_object(const ojson& item, FoundCall* call) {
  if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) return false;
  call->name = item["name"].get<std::string>();
  if (call->name.empty()) return false;
  if (!arguments_object(item.value("arguments", ojson()), &call->arguments)) return false;
  if (item.contains("id") && item["id"].is_string()) call->id = item["id"].get<std::string>();
  return true;
}

Block mistral_block(std::string_view text, size_t open, int /*index*/, bool /*partial*/, size_t* end,
                    std::vector<FoundCall>* calls) {
  size_t pos = skip_ws(text, open + kToolCalls.size());
  if (pos >= text.size()) return Block::kIncomplete;
  if (text[pos] == '[') {
    ojson arr;
    if (Block r = take_json(text, &pos, &arr); r != Block::kComplete) return r;
    if (!arr.is_array() || arr.empty()) return Block::kInvalid;
    for (const ojson& item : arr) {
      FoundCall call;
      if (!call_from_object(item, &call)) return Block::kInvalid;
      calls->push_back(std::move(call));
    }
    *end = pos;
    return Block::kComplete;
  }
  // NAME[ARGS]{...} or NAME[CALL_ID]ID[ARGS]{...}
  FoundCall call;
  const size_t br = text.find('[', pos);
  if (br == std::string_view::npos) {
    return text.find_first_of(" \n{\"", pos) == std::string_view::npos ? Block::kIncomplete : Block::kInvalid;
  }
  call.name = std::string(text.substr(pos, br - pos));
  if (call.name.empty() || call.name.find_first_of(" \n{\"") != std::string::npos) return Block::kInvalid;
  pos = br;
  if (Lit l = expect_lit(text, &pos, "[CALL_ID]"); l == Lit::kIncomplete) {
    return Block::kIncomplete;
  } else if (l == Lit::kOk) {
    const size_t args = text.find("[ARGS]", pos);
    if (args == std::string_view::npos) return Block::kIncomplete;
    call.id = std::string(text.substr(pos, args - pos));
    pos = args;
  }
  if (Lit l = expect_lit(text, &pos, "[ARGS]"); l != Lit::kOk) {
    return l == Lit::kIncomplete ? Block::kIncomplete : Block::kInvalid;
  }
  if (Block r = take_json(text, &pos, &call.arguments); r != Block::kComplete) return r;
  if (!call.arguments.is_object()) return Block::kInvalid;
  calls->push_back(std::move(call));
  *end = pos;
  return Block::kComplete;
}

}  // namespace

void parse_mistral(std::string_view text, MessageBuilder& out) {
  parse_blocks(text, {kToolCalls}, &mistral_block, out);
}

}  // namespace strix::chat::detail
