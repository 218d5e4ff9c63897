// Mistral tool calls, as llama.cpp's common_chat_parse_mistral_nemo reads them:
//   [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "abcdef123"}, ...]
// (arguments may also come stringified), and the later Mistral templates'
//   [TOOL_CALLS]f[ARGS]{...}   (one marker per call; [CALL_ID]id may precede [ARGS]).
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kToolCalls = "[TOOL_CALLS]";

Block mistral_block(std::string_view text, size_t open, int /*index*/, bool /*partial*/, size_t* end,
                    std::vector<FoundCall>* calls) {
  size_t pos = skip_ws(text, open + kToolCalls.size());
  if (pos >= text.size()) return Block::kIncomplete;
  if (text[pos] == '[') {
    const Block r = take_call_array(text, &pos, {"arguments"}, calls);
    if (r == Block::kComplete) *end = pos;
    return r;
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
  const Block r = take_arguments(text, &pos, &call);
  if (r != Block::kInvalid) calls->push_back(std::move(call));  // the name is certain at [ARGS]
  if (r == Block::kComplete) *end = pos;
  return r;
}

}  // namespace

void parse_mistral(std::string_view text, MessageBuilder& out) {
  parse_blocks(text, {kToolCalls}, &mistral_block, out);
}

}  // namespace strix::chat::detail
