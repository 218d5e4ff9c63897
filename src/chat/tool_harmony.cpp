// OpenAI harmony (gpt-oss), as llama.cpp's gpt-oss handler reads it. The
// prompt ends with "<|start|>assistant", so the reply is a run of messages,
// the first without its "<|start|>assistant" header start:
//   <|channel|>analysis<|message|>THINKING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER            (<|return|> is end-of-generation)
//   <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>ARGS<|call|>
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>
// analysis is reasoning; final and commentary without a recipient are
// content; a functions.* recipient is a tool call; other recipients
// (builtin browser / python tools) are dropped as llama.cpp drops them.
#include <cctype>

#include "chat/tool_scan.h"

namespace strix::chat::detail {

namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
const std::vector<std::string_view> kEnds = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};

struct Header {
  std::string channel, recipient;
};

Header read_header(std::string_view h) {
  Header out;
  if (const size_t c = h.find(kChannel); c != std::string_view::npos) {
    size_t e = c + kChannel.size();
    while (e < h.size() && (std::isalnum(static_cast<unsigned char>(h[e])) || h[e] == '_')) ++e;
    out.channel = std::string(h.substr(c + kChannel.size(), e - c - kChannel.size()));
  }
  if (const size_t t = h.find("to="); t != std::string_view::npos) {
    size_t e = t + 3;
    while (e < h.size() && h[e] != ' ' && h[e] != '<' && h[e] != '\n') ++e;
    out.recipient = std::string(h.substr(t + 3, e - t - 3));
  }
  return out;
}

// Could text[pos..] still be (or begin) a message header?
bool header_like(std::string_view rest) {
  for (std::string_view lit : {kStart, kChannel, std::string_view(" to=")}) {
    const size_t n = std::min(lit.size(), rest.size());
    if (rest.substr(0, n) == lit.substr(0, n)) return true;
  }
  return false;
}

}  // namespace

void parse_harmony(std::string_view text, const ParseOptions& opts, MessageBuilder& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    const std::string_view rest = text.substr(pos);
    if (!header_like(rest)) {
      // Not harmony markup: plain text up to the next message start.
      const size_t next = text.find(kStart, pos);
      const size_t stop = next != std::string_view::npos ? next
                          : out.partial()                ? held_tail(text, pos, {kStart})
                                                         : std::string_view::npos;
      out.add_content(text.substr(pos, stop == std::string_view::npos ? std::string_view::npos : stop - pos));
      if (next == std::string_view::npos) return;
      pos = next;
      continue;
    }
    const size_t msg = text.find(kMessage, pos);
    if (msg == std::string_view::npos) {
      if (!out.partial()) out.add_content(rest);
      return;
    }
    const Header h = read_header(text.substr(pos, msg - pos));
    const size_t body = msg + kMessage.size();
    const OpenerHit end = find_opener(text, body, kEnds);
    const bool closed = end.index >= 0;
    size_t body_end = closed ? end.pos : text.size();
    if (!closed && out.partial()) {
      if (const size_t held = held_tail(text, body, kEnds); held != std::string_view::npos) body_end = held;
    }
    const size_t next = !closed ? text.size() : end.index == 3 ? end.pos : end.pos + kEnds[end.index].size();
    const std::string_view content = text.substr(body, body_end - body);
    if (h.recipient.rfind("functions.", 0) == 0) {
      const bool named = opts.parse_tool_calls && h.recipient.size() > 10;
      FoundCall call;
      size_t args_end = 0;
      const Block r = named ? take_arguments(content, &args_end, &call) : Block::kInvalid;
      if (!closed && out.partial()) {
        // The name is certain at <|message|>: the arguments stream as they come.
        if (r != Block::kInvalid) out.add_partial_call(h.recipient.substr(10), "", std::move(call.arguments));
        return;
      }
      if (!opts.parse_tool_calls) {
        // Calls are not wanted: the message is dropped, as llama.cpp does.
      } else if (r == Block::kComplete && skip_ws(content, args_end) == content.size()) {
        out.add_tool_call_text(h.recipient.substr(10), "", std::move(call.arguments));
      } else {
        out.add_content(text.substr(pos, next - pos));  // not a usable call: keep the text
      }
    } else if (!h.recipient.empty() && h.recipient != "assistant") {
      if (!closed && out.partial()) return;
    } else if (h.channel == "analysis") {
      if (opts.extract_reasoning) {
        out.add_reasoning(content);
      } else {
        // reasoning_format none: the whole message, markup included, is content.
        out.add_content(text.substr(pos, (closed ? next : body_end) - pos));
      }
    } else {
      out.add_content(content);
    }
    if (!closed) return;
    pos = next;
  }
}

}  // namespace strix::chat::detail
