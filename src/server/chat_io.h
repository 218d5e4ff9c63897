// The chat side shared by OpenAI chat completions, Anthropic Messages and the
// Responses API: each API turns its request into OpenAI-shaped messages and
// tools (ChatCall); plan_chat renders the prompt with the model's template,
// picks the tool-call grammar and how the reply is parsed (chat/tool_calls.h);
// ChatStream parses a streamed reply into content / reasoning / tool-call
// deltas, and Blocks groups those deltas into the open/delta/close blocks
// that Anthropic's and the Responses API's event streams are made of.
#pragma once

#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "chat/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

// How the server renders and parses chat (fixed at start-up).
struct ChatEnv {
  std::string tmpl;  // Jinja source; "" refuses chat requests
  chat::ToolFormat format = chat::ToolFormat::kNone;
  bool extract_reasoning = true;  // --reasoning-format deepseek / auto; false for none
  // --reasoning: 1 on / 0 off render with enable_thinking true / false unless
  // a request's chat_template_kwargs set it (llama-server's
  // default_template_kwargs); -1 auto leaves it to the template.
  int reasoning = -1;
  const tok::Tokenizer* tk = nullptr;
};

struct ChatCall {
  // OpenAI-shaped messages: {role, content (string), tool_calls?: [{id, type,
  // function: {name, arguments (JSON text)}}], tool_call_id?, name?}.
  nlohmann::json messages = nlohmann::json::array();
  // [{type: function, function: {name, description, parameters}}]; ordered:
  // the parameters' schemas keep the request's key order (order_tool_schemas)
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  std::string tool_choice = "auto";  // none | auto | required
  std::string forced_name;           // a named function (implies required)
  bool parallel = true;
  std::string tools_field = "tools";  // the request field named in errors about tools
  nlohmann::json template_kwargs = nlohmann::json::object();
};

struct ChatPlan {
  std::string prompt;
  // What add_generation_prompt appended (common_chat_params::generation_prompt),
  // for templates with <think> blocks: it primes the reasoning budget.
  std::string generation_prompt;
  bool tools_active = false;
  bool parse_output = false;  // run the reply through the tool-call / reasoning parser
  chat::ParseOptions parse;
  std::string grammar;  // GBNF forcing tool calls ("" when none)
  bool grammar_lazy = false;
  std::vector<std::string> grammar_triggers;
};

// The request body parses into key-sorted JSON, but llama-server keeps the
// order the client wrote: it shows in the tools the template renders and in
// the order the tool-call grammar writes arguments. Puts the body's own
// schema of each tool (reached by `path` inside body.tools[i], e.g.
// {"function", "parameters"}) back into call.tools[i].
void order_tool_schemas(ChatCall& call, const std::string& body, std::initializer_list<const char*> path);

// Throws ApiError (400) for a model without template, bad tools, or tools on a
// template whose native llama.cpp format Strix does not implement (templates
// without a native format get the generic one).
ChatPlan plan_chat(const ChatEnv& env, const ChatCall& call);

// The whole reply, parsed (content only when the plan does not parse).
chat::ParsedMessage parse_output(const ChatPlan& plan, const std::string& text);

class ChatStream {
 public:
  explicit ChatStream(const ChatPlan& plan);
  std::vector<chat::StreamDelta> feed(const std::string& piece);
  std::vector<chat::StreamDelta> finish();
  bool saw_tool_call() const { return tool_calls_ > 0; }

 private:
  std::unique_ptr<chat::StreamParser> parser_;
  int tool_calls_ = 0;
  std::vector<chat::StreamDelta> count(std::vector<chat::StreamDelta> d);
};

// Content blocks in order: reasoning, text or one tool call each.
struct BlockEvent {
  enum class Kind { kOpen, kDelta, kClose } kind;
  enum class Type { kText, kReasoning, kTool } type;
  int index = 0;         // block number (0, 1, ...)
  std::string id, name;  // tool blocks (open)
  std::string text;      // delta: text, reasoning or argument JSON fragment; close: the block's whole text
};

class Blocks {
 public:
  std::vector<BlockEvent> on(const chat::StreamDelta& d);
  std::vector<BlockEvent> close();  // closes the open block (at the end)
  int count() const { return next_; }

 private:
  void open(std::vector<BlockEvent>& out, BlockEvent::Type t, int tool, const std::string& id, const std::string& name);
  void delta(std::vector<BlockEvent>& out, const std::string& text);
  bool open_ = false;
  BlockEvent::Type type_ = BlockEvent::Type::kText;
  int tool_ = -1;
  int next_ = 0;
  std::string text_;
};

}  // namespace strix::server
