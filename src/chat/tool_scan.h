// Shared pieces of the tool-call parsers (chat/tool_calls.h): a JSON value
// scanner that tells a complete value from one still being generated, partial
// markers at the end of streamed text, <think> reasoning, and the message
// being built. Internal to src/chat/tool_*.cpp.
//
// Every format parser runs in one of two modes over the text generated so far:
//  - final (partial = false): the text is the whole reply; markup that never
//    completed, or that is not valid, stays in content as text;
//  - partial (partial = true): the text may continue; anything not decided yet
//    (a trailing prefix of a marker, a tool call still open, trailing
//    whitespace) is held back, so that what partial mode returns for a prefix
//    is always a prefix of what any longer text returns (streaming relies on it).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "chat/tool_calls.h"

namespace strix::chat::detail {

using ojson = nlohmann::ordered_json;

enum class JsonScan { kComplete, kIncomplete, kInvalid };

// Scans one JSON value starting at `pos` (leading whitespace skipped). On
// kComplete, *end is one past the value. kIncomplete: the text ends before the
// value does (it may still complete); kInvalid: no continuation can make it
// JSON. The scan checks structure (brackets, strings, escapes, literals,
// numbers); callers still parse complete values with nlohmann. Values nested
// deeper than 512 levels are kInvalid. With `out`, also canonical_json's text.
JsonScan scan_json(std::string_view s, size_t pos, size_t* end, std::string* out = nullptr);

// Parses s[pos, end) as JSON (ordered keys); false when it is not valid.
bool parse_json(std::string_view s, ojson* out);

// The canonical text of the JSON value at s[pos] (leading whitespace
// skipped), written left to right token by token: compact, keys in the
// model's order, each string and number as nlohmann's dump() writes it (so
// it equals dump() of the parsed value, except that a repeated key is kept).
// kComplete: *out is the whole value, *end one past it. kIncomplete: *out is
// the part no continuation of the text can change (a number or literal still
// being written is left out, a string is cut at its last whole character),
// so the canonical text of any longer text starts with it: streamed argument
// fragments rely on that. kInvalid: no continuation is JSON.
inline JsonScan canonical_json(std::string_view s, size_t pos, std::string* out, size_t* end) {
  return scan_json(s, pos, end, out);
}
// One string, number or literal token at s[i], canonical (tool_json.cpp).
JsonScan canonical_token(std::string_view s, size_t i, std::string* out, size_t* end);

// The start of the longest proper prefix of `marker` that ends `text` (not the
// whole marker), or npos. Partial mode holds text from there back.
size_t partial_marker_at_end(std::string_view text, std::string_view marker);

size_t skip_ws(std::string_view s, size_t pos);
std::string_view trim(std::string_view s);
std::string_view rtrim(std::string_view s);
bool starts_with_at(std::string_view s, size_t pos, std::string_view lit);

// A random tool-call id: "call_" + 24 alphanumerics (OpenAI's look), or for
// Mistral 9 alphanumerics (its templates raise on any other id).
std::string generate_tool_call_id(ToolFormat format);

// The message under construction. Content segments after a tool call lose
// their leading whitespace (the markup's line breaks); the final content is
// trimmed at both ends, and in partial mode trailing whitespace is held back.
class MessageBuilder {
 public:
  explicit MessageBuilder(bool partial) : partial_(partial) {}
  void add_content(std::string_view text);
  void add_reasoning(std::string_view text) { reasoning_ += text; }
  // Adds a call whose arguments are a JSON object (re-serialized by dump()).
  void add_tool_call(std::string name, std::string id, const ojson& arguments);
  // Adds a call whose arguments are already canonical text (canonical_json).
  void add_tool_call_text(std::string name, std::string id, std::string arguments);
  // Partial mode: the call still being written, its name certain and its
  // arguments the canonical text so far. It is the last thing in the message.
  void add_partial_call(std::string name, std::string id, std::string arguments) {
    add_tool_call_text(std::move(name), std::move(id), std::move(arguments));
  }
  bool partial() const { return partial_; }
  ParsedMessage finish();

 private:
  bool partial_;
  bool after_call_ = false;
  std::string content_, reasoning_;
  std::vector<ToolCall> calls_;
};

// Splits leading reasoning off `text` ("<think>...</think>", or everything up
// to "</think>" when opts.thinking_forced_open) into `out`, returning the
// offset where the rest starts. In partial mode an unclosed block yields its
// text so far (minus a partial "</think>") and returns text.size().
size_t parse_think_block(std::string_view text, const ParseOptions& opts, MessageBuilder& out);

// Per-format parsers over the text after reasoning was split off.
void parse_hermes(std::string_view text, MessageBuilder& out);
void parse_llama3(std::string_view text, MessageBuilder& out);
void parse_mistral(std::string_view text, MessageBuilder& out);
void parse_deepseek(std::string_view text, MessageBuilder& out);
void parse_generic(std::string_view text, MessageBuilder& out);
// Harmony carries its own reasoning channel, so it sees the options.
void parse_harmony(std::string_view text, const ParseOptions& opts, MessageBuilder& out);

// A format parser's building block: text that may contain markers. Emits
// content up to the first of `openers` (holding back a trailing partial one
// in partial mode) and returns the opener's index and position, or -1 when
// none (content then was emitted up to the end or the held-back tail).
struct OpenerHit {
  int index = -1;
  size_t pos = std::string_view::npos;
};
OpenerHit find_opener(std::string_view text, size_t from, const std::vector<std::string_view>& openers);
// In partial mode: the position from which `text[from..]` must be held back
// because it ends with a partial opener (npos when nothing is held).
size_t held_tail(std::string_view text, size_t from, const std::vector<std::string_view>& openers);

// A literal expected at s[*pos]: kOk advances *pos past it; kIncomplete means
// the text ends inside it (it may still come).
enum class Lit { kOk, kIncomplete, kMismatch };
Lit expect_lit(std::string_view s, size_t* pos, std::string_view lit);

// One tool call found in a block. `arguments` is canonical JSON text
// (canonical_json); complete = false marks the call still being written
// (partial mode only): its name is certain and its arguments have begun.
struct FoundCall {
  std::string name, id;
  std::string arguments;
  bool complete = true;
};
enum class Block { kComplete, kIncomplete, kInvalid };
// Parses the markup block opened by openers[index] at `open`; on kComplete
// sets *end past the block and fills `calls`. On kIncomplete in partial mode
// `calls` holds the calls written so far (the last one possibly incomplete),
// which streaming shows before the block closes.
using BlockParser = Block (*)(std::string_view text, size_t open, int index, bool partial, size_t* end,
                              std::vector<FoundCall>* calls);
// The common loop of the tagged formats: content up to each opener, then the
// block; an invalid block leaves its opener in content and scanning goes on
// after it; an unfinished one shows its calls so far (partial) or is kept as
// content (final).
void parse_blocks(std::string_view text, const std::vector<std::string_view>& openers, BlockParser block,
                  MessageBuilder& out);

// Adds found calls to the message (the incomplete one as a partial call).
void add_calls(std::vector<FoundCall>& calls, MessageBuilder& out);

// A JSON value at s[*pos] (after whitespace), parsed: kComplete advances *pos.
Block take_json(std::string_view s, size_t* pos, ojson* out);

// Arguments given as JSON text at s[*pos]: an object, written canonically.
// kIncomplete leaves in *call what is known so far (call->complete = false);
// a value that is not an object is kInvalid.
Block take_arguments(std::string_view s, size_t* pos, FoundCall* call);

// A call object {"name": "f", ARGS: {...}, "id": "..."} at s[*pos], where
// ARGS is the first of `args_keys` present, holding an object or a string
// that holds one; other keys are skipped (with type_function, a "type" key
// must be "function"). A repeated name or arguments key is kInvalid.
// kComplete advances *pos past the object. kIncomplete: *streamable tells
// whether the call's name is known; *call then holds what is known so far
// (complete = false; arguments empty until their object has begun).
Block take_call_object(std::string_view s, size_t* pos, const std::vector<std::string_view>& args_keys,
                       bool type_function, FoundCall* call, bool* streamable);
// A non-empty JSON array of call objects at s[*pos]; kIncomplete leaves the
// calls so far in `calls` (the last one incomplete when it is streamable).
Block take_call_array(std::string_view s, size_t* pos, const std::vector<std::string_view>& args_keys,
                      std::vector<FoundCall>* calls);

}  // namespace strix::chat::detail
