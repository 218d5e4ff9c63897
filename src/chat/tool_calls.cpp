#include "chat/tool_calls.h"

#include "chat/tool_scan.h"
#include "core/error.h"

namespace strix::chat {

using detail::MessageBuilder;

const char* tool_format_name(ToolFormat f) {
  switch (f) {
    case ToolFormat::kNone:
      return "none";
    case ToolFormat::kGeneric:
      return "generic";
    case ToolFormat::kHermes:
      return "hermes";
    case ToolFormat::kLlama3Json:
      return "llama3-json";
    case ToolFormat::kMistral:
      return "mistral";
    case ToolFormat::kDeepSeekV3:
      return "deepseek-v3";
    case ToolFormat::kHarmony:
      return "harmony";
  }
  return "unknown";
}

// The markers llama.cpp's common_chat_templates_apply_jinja looks for in the
// template source, in its order (gpt-oss's channel marker first, as later
// llama.cpp versions check it before the others).
ToolFormat detect_tool_format(std::string_view src) {
  auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (has("<|channel|>")) return ToolFormat::kHarmony;
  if (has("<｜tool▁calls▁begin｜>")) return ToolFormat::kDeepSeekV3;
  // Command R7B: a format of its own in llama.cpp that Strix does not implement.
  if (has("<|END_THINKING|><|START_ACTION|>")) return ToolFormat::kNone;
  if (has("<tool_call>")) return ToolFormat::kHermes;
  // Functionary v3.2 (">>>all"), FireFunction v2 (" functools[") and
  // Functionary v3.1 (Llama 3 headers with "<function="): llama.cpp formats
  // Strix does not implement, so no generic fallback either (llama-server
  // would not use it for them).
  if (has(">>>all") || has(" functools[")) return ToolFormat::kNone;
  if (has("<|start_header_id|>") && has("<function=")) return ToolFormat::kNone;
  if (has("<|start_header_id|>ipython<|end_header_id|>")) return ToolFormat::kLlama3Json;
  if (has("[TOOL_CALLS]")) return ToolFormat::kMistral;
  // Every other template (Gemma's, ChatML without tools, Llama 2, one that
  // renders tools without a call syntax of its own) gets llama.cpp's generic
  // JSON format: its "Generic fallback" at the end of the same dispatch. What
  // the template cannot render (tools, calls, results) minja's polyfills put
  // into the messages (chat/tool_polyfill.h).
  return ToolFormat::kGeneric;
}

std::vector<std::string> tool_format_markers(ToolFormat f) {
  switch (f) {
    case ToolFormat::kNone:
    case ToolFormat::kGeneric:
      return {"<think>", "</think>"};
    case ToolFormat::kHermes:
      return {"<think>", "</think>", "<tool_call>", "</tool_call>", "<function=", "</function>"};
    case ToolFormat::kLlama3Json:
      return {"<|python_tag|>"};
    case ToolFormat::kMistral:
      return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<think>", "</think>"};
    case ToolFormat::kDeepSeekV3:
      return {"<think>",
              "</think>",
              "<｜tool▁calls▁begin｜>",
              "<｜tool▁call▁begin｜>",
              "<｜tool▁sep｜>",
              "<｜tool▁call▁end｜>",
              "<｜tool▁calls▁end｜>"};
    case ToolFormat::kHarmony:
      return {"<|channel|>", "<|constrain|>", "<|message|>", "<|start|>", "<|end|>"};
  }
  return {};
}

bool prompt_opens_thinking(std::string_view prompt) {
  const std::string_view p = detail::rtrim(prompt);
  return p.size() >= 7 && p.substr(p.size() - 7) == "<think>";
}

std::vector<std::string> tool_format_extra_stops(ToolFormat f) {
  if (f == ToolFormat::kLlama3Json) return {"<|eom_id|>"};
  return {};
}

namespace {

ParsedMessage parse_impl(std::string_view text, const ParseOptions& opts, bool partial) {
  MessageBuilder out(partial);
  if (opts.format == ToolFormat::kHarmony) {
    detail::parse_harmony(text, opts, out);
    return out.finish();
  }
  const size_t rest = detail::parse_think_block(text, opts, out);
  const std::string_view body = text.substr(rest);
  if (!opts.parse_tool_calls) {
    out.add_content(body);
    return out.finish();
  }
  switch (opts.format) {
    case ToolFormat::kNone:
      out.add_content(body);
      break;
    case ToolFormat::kGeneric:
      detail::parse_generic(body, out);
      break;
    case ToolFormat::kHermes:
      detail::parse_hermes(body, out);
      break;
    case ToolFormat::kLlama3Json:
      detail::parse_llama3(body, out);
      break;
    case ToolFormat::kMistral:
      detail::parse_mistral(body, out);
      break;
    case ToolFormat::kDeepSeekV3:
      detail::parse_deepseek(body, out);
      break;
    case ToolFormat::kHarmony:
      break;
  }
  return out.finish();
}

bool starts_with(const std::string& s, const std::string& head) {
  return s.size() >= head.size() && s.compare(0, head.size(), head) == 0;
}

// Whether `now` only adds to what was streamed: the same calls (names),
// longer or equal texts. It fails only when markup that had begun streaming
// turned out broken or cut (see tool_calls.h).
bool extends(const ParsedMessage& sent, const ParsedMessage& now) {
  if (!starts_with(now.content, sent.content) || !starts_with(now.reasoning_content, sent.reasoning_content)) {
    return false;
  }
  if (now.tool_calls.size() < sent.tool_calls.size()) return false;
  for (size_t i = 0; i < sent.tool_calls.size(); ++i) {
    if (now.tool_calls[i].name != sent.tool_calls[i].name) return false;
    if (!starts_with(now.tool_calls[i].arguments, sent.tool_calls[i].arguments)) return false;
  }
  return true;
}

}  // namespace

ParsedMessage parse_reply(std::string_view text, const ParseOptions& opts) {
  ParsedMessage m = parse_impl(text, opts, /*partial=*/false);
  for (ToolCall& c : m.tool_calls) {
    if (c.id.empty()) c.id = detail::generate_tool_call_id(opts.format);
  }
  return m;
}

struct StreamParser::Impl {
  ParseOptions opts;
  std::string text;
  ParsedMessage emitted;
  bool finished = false;
  bool diverged = false;

  // Deltas in the order the text has them: reasoning (it leads), the
  // arguments of calls already open, content (it comes before any call not
  // yet open, as the APIs' non-streamed replies order them), new calls.
  std::vector<StreamDelta> advance(bool partial) {
    if (diverged) return {};
    const ParsedMessage now = parse_impl(text, opts, partial);
    if (!extends(emitted, now)) {
      // Nothing can be taken back: keep what was sent and stop.
      diverged = true;
      return {};
    }
    std::vector<StreamDelta> out;
    if (now.reasoning_content.size() > emitted.reasoning_content.size()) {
      StreamDelta d;
      d.reasoning_content = now.reasoning_content.substr(emitted.reasoning_content.size());
      emitted.reasoning_content = now.reasoning_content;
      out.push_back(std::move(d));
    }
    for (size_t i = 0; i < emitted.tool_calls.size(); ++i) {
      std::string& sent = emitted.tool_calls[i].arguments;
      const std::string& full = now.tool_calls[i].arguments;
      if (full.size() == sent.size()) continue;
      StreamDelta d;
      d.tool_index = static_cast<int>(i);
      d.arguments = full.substr(sent.size());
      sent = full;
      out.push_back(std::move(d));
    }
    if (now.content.size() > emitted.content.size()) {
      StreamDelta d;
      d.content = now.content.substr(emitted.content.size());
      emitted.content = now.content;
      out.push_back(std::move(d));
    }
    // A call opens with its id and name (and its arguments so far, maybe
    // none); the id is the model's when it came before the arguments, else
    // one generated now that the whole stream keeps.
    for (size_t i = emitted.tool_calls.size(); i < now.tool_calls.size(); ++i) {
      ToolCall c = now.tool_calls[i];
      if (c.id.empty()) c.id = detail::generate_tool_call_id(opts.format);
      StreamDelta d;
      d.tool_index = static_cast<int>(i);
      d.tool_id = c.id;
      d.tool_name = c.name;
      d.arguments = c.arguments;
      emitted.tool_calls.push_back(std::move(c));
      out.push_back(std::move(d));
    }
    return out;
  }
};

StreamParser::StreamParser(const ParseOptions& opts) : impl_(new Impl) { impl_->opts = opts; }

StreamParser::~StreamParser() { delete impl_; }

std::vector<StreamDelta> StreamParser::feed(std::string_view piece) {
  if (impl_->finished) throw Error("StreamParser::feed called after finish()");
  impl_->text += piece;
  return impl_->advance(/*partial=*/true);
}

std::vector<StreamDelta> StreamParser::finish() {
  if (impl_->finished) return {};
  impl_->finished = true;
  return impl_->advance(/*partial=*/false);
}

ParsedMessage StreamParser::message() const { return impl_->emitted; }

bool StreamParser::diverged() const { return impl_->diverged; }

}  // namespace strix::chat
