// DeepSeek V3 / R1 tool calls, as llama.cpp's common_chat_parse_deepseek_r1
// reads them:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
//   (\n<｜tool▁call▁begin｜>...)*<｜tool▁calls▁end｜>
// plus the opening-tag variants the R1 distills emit, and DeepSeek V3.1's
// <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>. The official V3
// template writes no <｜tool▁calls▁end｜> after a single call, so it may be
// missing at the end of a reply.
#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kSep = "<｜tool▁sep｜>";

const std::vector<std::string_view>& openers() {
  static const std::vector<std::string_view> o = {"<｜tool▁calls▁begin｜>", "<｜tool_calls_begin｜>",
                                                  "<｜tool calls begin｜>", "<｜tool\\_calls\\_begin｜>",
                                                  "<｜tool▁calls｜>"};
  return o;
}

Block lit_block(Lit l) { return l == Lit::kIncomplete ? Block::kIncomplete : Block::kInvalid; }

// One call at *pos (the optional <｜tool▁call▁begin｜> included).
Block one_call(std::string_view text, size_t* pos, FoundCall* call) {
  size_t j = *pos;
  if (Lit l = expect_lit(text, &j, kCallBegin); l == Lit::kIncomplete) return Block::kIncomplete;
  const size_t sep = text.find(kSep, j);
  if (sep == std::string_view::npos) {
    // The header (type or name) is one short line.
    std::string_view head = text.substr(j);
    head = head.substr(0, partial_marker_at_end(head, kSep));
    return head.find('\n') == std::string_view::npos && head.find("<｜") == std::string_view::npos ? Block::kIncomplete
                                                                                                   : Block::kInvalid;
  }
  const std::string_view head = text.substr(j, sep - j);
  // As above: a header never spans lines or holds markup.
  if (head.empty() || head.find('\n') != std::string_view::npos || head.find("<｜") != std::string_view::npos) {
    return Block::kInvalid;
  }
  j = sep + kSep.size();
  if (head == "function") {
    const size_t nl = text.find('\n', j);
    if (nl == std::string_view::npos) return Block::kIncomplete;
    call->name = std::string(text.substr(j, nl - j));
    if (call->name.empty()) return Block::kInvalid;
    j = nl + 1;
    if (Lit l = expect_lit(text, &j, "```json"); l != Lit::kOk) return lit_block(l);
  } else {
    call->name = std::string(head);
  }
  // From here the name is certain: the arguments stream as they come.
  if (Block r = take_arguments(text, &j, call); r != Block::kComplete) return r;
  j = skip_ws(text, j);
  if (head == "function") {
    if (Lit l = expect_lit(text, &j, "```"); l != Lit::kOk) return lit_block(l);
    j = skip_ws(text, j);
  }
  if (Lit l = expect_lit(text, &j, kCallEnd); l != Lit::kOk) return lit_block(l);
  *pos = j;
  return Block::kComplete;
}

Block deepseek_block(std::string_view text, size_t open, int index, bool partial, size_t* end,
                     std::vector<FoundCall>* calls) {
  size_t pos = open + openers()[index].size();
  while (true) {
    const size_t j = skip_ws(text, pos);
    if (j >= text.size()) {
      if (partial || calls->empty()) return Block::kIncomplete;
      *end = j;
      return Block::kComplete;
    }
    size_t k = j;
    const Lit l = expect_lit(text, &k, kCallsEnd);
    if (l == Lit::kOk) {
      if (calls->empty()) return Block::kInvalid;
      *end = k;
      return Block::kComplete;
    }
    if (l == Lit::kIncomplete) return Block::kIncomplete;
    FoundCall call;
    size_t p = j;
    const Block r = one_call(text, &p, &call);
    if (r == Block::kIncomplete && !call.name.empty()) calls->push_back(std::move(call));  // its name is certain
    if (r != Block::kComplete) return r;
    calls->push_back(std::move(call));
    pos = p;
  }
}

}  // namespace

void parse_deepseek(std::string_view text, MessageBuilder& out) { parse_blocks(text, openers(), &deepseek_block, out); }

}  // namespace strix::chat::detail
