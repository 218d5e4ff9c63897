// Tool calls and reasoning in a model's own output format, as llama.cpp's
// common/chat parses them: the format is picked from the chat template's
// source, the model's text is split into content, reasoning (<think>...) and
// tool calls, whole or incrementally while it streams, and a grammar can force
// a tool call (tool_choice "required" or a named function) or constrain it
// lazily once a trigger appears (tool_choice "auto").
//
// The server's OpenAI, Anthropic and Responses endpoints all go through this.
//
// Typical use (server side):
//   ParseOptions po{.format = detect_tool_format(template_source),
//                   .parse_tool_calls = has_tools && tool_choice != "none",
//                   .extract_reasoning = reasoning_format != "none",
//                   .thinking_forced_open = prompt_opens_thinking(prompt)};
//   StreamParser sp(po);  for each detokenized piece: deltas = sp.feed(piece);
//   at the end: deltas = sp.finish();   (non-streaming: parse_reply(text, po))
// Markup that never completes (a reply cut by max_tokens) or is not valid
// (bad JSON arguments, no function name) stays in content as text; parsing
// never throws for bad model output.
//
// Arguments are JSON text in one canonical form (compact, the model's key
// order, strings and numbers as nlohmann's dump() writes them, which is
// llama.cpp's arguments.dump()), built left to right so that streaming can
// send it in pieces. Streaming, as llama-server does it: a call opens with
// one delta carrying its index, id and name (and the arguments so far,
// possibly none) as soon as its name is certain (Hermes / Mistral / generic /
// Llama 3 JSON: the "name" value is complete, and for Llama 3, whose calls
// are bare JSON, its "parameters" object has begun; DeepSeek, <function=f>,
// Mistral's f[ARGS], harmony: the name's markup has closed); then deltas
// with only the index and the next fragment of the arguments as the model
// writes them (a number, true/false/null, or a string's partial escape or
// UTF-8 character is sent once whole). Joined, a call's fragments equal the
// arguments parse_reply gives for the same text. Held back until decided:
// a partial marker ("<tool_"), a Llama 3 object before its parameters, text
// before a call's name is known, ids that come after the arguments (the
// stream then uses a generated id for that call), Llama 3 <|python_tag|>
// code (a whole call at the end).
// The generic format's {"response": "TEXT"} streams TEXT as content while
// it is written (as llama.cpp does).
// What can contradict a call once it opened (or a generic response once its
// text began) is a reply cut inside it (max_tokens, a stop string) or markup
// the model breaks later (bad JSON, a wrong closing tag; the tool-call
// grammar rules both out): parse_reply then keeps the raw text as content,
// while a stream cannot take back what it sent. The stream keeps what it
// sent (a call's arguments cut where the text broke off, as OpenAI streams a
// call cut by max_tokens), sends nothing more (diverged() turns true), and
// message() is what was sent.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

enum class ToolFormat {
  kNone,        // a native llama.cpp format Strix does not implement (Command R7B, Functionary, FireFunction): refused
  kGeneric,     // a JSON object {"tool_call": {...}} / {"response": ...} (llama.cpp's generic fallback)
  kHermes,      // <tool_call>{"name":..,"arguments":..}</tool_call> (Hermes 2 Pro, Qwen 2.5 / 3)
  kLlama3Json,  // {"name":..,"parameters":..} as the whole reply (Llama 3.1 / 3.2 / 3.3)
  kMistral,     // [TOOL_CALLS][{"name":..,"arguments":..,"id":..}] (Mistral Nemo / Small)
  kDeepSeekV3,  // <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜> (DeepSeek V3 / R1)
  kHarmony,     // gpt-oss: <|channel|>commentary to=functions.NAME ... <|message|>ARGS<|call|>
};
const char* tool_format_name(ToolFormat f);

// The format a chat template (Jinja source) implies, from the markers
// llama.cpp looks for, in its order; kGeneric for every template without a
// native format (llama.cpp's generic fallback: Gemma's, ChatML, Llama 2, one
// that renders tools without a call syntax), kNone for a native llama.cpp
// format Strix does not implement.
ToolFormat detect_tool_format(std::string_view template_source);

struct ToolCall {
  std::string id;  // as the model gave it, else generated ("call_" + 24 chars; Mistral: 9 alphanumerics)
  std::string name;
  std::string arguments;  // JSON text of an object
};

struct ParsedMessage {
  std::string content;
  std::string reasoning_content;  // text in the reasoning block; empty when none or reasoning_format "none"
  std::vector<ToolCall> tool_calls;
};

struct ParseOptions {
  ToolFormat format = ToolFormat::kNone;
  bool parse_tool_calls = true;       // false: tool-call markup stays in content (harmony: dropped, as llama.cpp)
  bool extract_reasoning = true;      // llama-server --reasoning-format deepseek/auto; false for "none"
  bool thinking_forced_open = false;  // the prompt ended inside <think> (template opened it)
};

// Whether a rendered prompt leaves the reply inside a reasoning block (it
// ends with "<think>" and optional whitespace), as llama.cpp decides
// thinking_forced_open.
bool prompt_opens_thinking(std::string_view prompt);

// Parses a complete reply.
ParsedMessage parse_reply(std::string_view text, const ParseOptions& opts);

// Incremental parsing for streaming: feed() takes each newly decoded piece of
// text and returns what can be emitted now; text that may still turn into
// markup (a partial "<tool_call>" or "<think>") is held back until it is
// decided. finish() flushes at the end of generation.
struct StreamDelta {
  std::string content;
  std::string reasoning_content;
  int tool_index = -1;    // >= 0: this delta belongs to tool call #tool_index
  std::string tool_id;    // set on the first delta of a tool call only
  std::string tool_name;  // set on the first delta of a tool call only
  std::string arguments;  // the next fragment of the arguments' JSON text (may be empty on the first delta)
};

class StreamParser {
 public:
  explicit StreamParser(const ParseOptions& opts);
  ~StreamParser();
  StreamParser(const StreamParser&) = delete;
  StreamParser& operator=(const StreamParser&) = delete;

  std::vector<StreamDelta> feed(std::string_view piece);
  std::vector<StreamDelta> finish();
  // Everything sent so far (the deltas joined, with each call's id): after
  // finish(), what parse_reply gives for the whole text unless diverged().
  ParsedMessage message() const;
  // True once the text broke markup that had already begun streaming (a
  // reply cut inside a call): nothing more was sent from then on.
  bool diverged() const;

 private:
  struct Impl;
  Impl* impl_;
};

// A grammar (GBNF) that constrains the reply to tool calls in `format` for the
// OpenAI-style `tools` array (each {"type":"function","function":{name,
// description, parameters}}). forced_name non-empty: exactly that function.
// parallel: more than one call allowed. The returned triggers are set when the
// grammar should be lazy (tool_choice "auto": free text until a trigger).
// Ordered JSON: a schema's properties are written in its key order, as
// llama.cpp's json-schema-to-grammar does, so give the request's order.
struct ToolGrammar {
  std::string gbnf;
  bool lazy = false;
  std::vector<std::string> trigger_patterns;  // regexes for sampling::Params::grammar_trigger_patterns
};
ToolGrammar tool_call_grammar(ToolFormat format, const nlohmann::ordered_json& tools, std::string_view forced_name,
                              bool required, bool parallel);

// Same, knowing more about the prompt. thinking_forced_open: the prompt ended
// inside <think> (DeepSeek R1 style), so a forced (non-lazy) grammar lets the
// reply finish its reasoning and "</think>" before the calls.
struct ToolGrammarOptions {
  bool thinking_forced_open = false;
};
ToolGrammar tool_call_grammar(ToolFormat format, const nlohmann::ordered_json& tools, std::string_view forced_name,
                              bool required, bool parallel, const ToolGrammarOptions& options);

// The markup strings of a format that must reach the parser as text: when
// they are special tokens of the vocabulary, the generated text must render
// them (llama.cpp's preserved_tokens; e.g. gpt-oss's <|channel|>, <|message|>).
std::vector<std::string> tool_format_markers(ToolFormat format);

// Extra stop strings llama.cpp adds for a format with tools (Llama 3.x ends a
// builtin-tool call with <|eom_id|>). Empty for most formats.
std::vector<std::string> tool_format_extra_stops(ToolFormat format);

}  // namespace strix::chat
