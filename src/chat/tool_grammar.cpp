// Grammars that force or constrain tool calls (tool_call_grammar in
// chat/tool_calls.h), shaped as llama.cpp's common_chat_params_init_* build
// them: each function's parameters go through json_schema_to_grammar, and the
// format's markup wraps them. tool_choice "auto" gives a lazy grammar with
// trigger patterns at the call's opening marker; "required" or a named
// function gives a grammar active from the first token.
#include <cctype>

#include "chat/tool_calls.h"
#include "chat/tool_scan.h"
#include "core/error.h"
#include "grammar/json_schema.h"

namespace strix::chat {

namespace {

using detail::ojson;

struct Function {
  std::string name;
  ojson parameters;
};

std::vector<Function> functions(const nlohmann::ordered_json& tools, std::string_view forced) {
  if (!tools.is_array()) throw Error("tools must be an array of {\"type\": \"function\", \"function\": {...}}");
  std::vector<Function> out;
  for (const auto& t : tools) {
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string()) {
      continue;  // not a function tool (llama.cpp skips those too)
    }
    const auto& f = t["function"];
    Function fn{f["name"].get<std::string>(), ojson::object()};
    if (f.contains("parameters") && f["parameters"].is_object() && !f["parameters"].empty()) {
      fn.parameters = ojson::parse(f["parameters"].dump());
    } else {
      fn.parameters = ojson{{"type", "object"}, {"properties", ojson::object()}};
    }
    if (!forced.empty() && fn.name != forced) continue;
    out.push_back(std::move(fn));
  }
  if (out.empty()) {
    throw Error(forced.empty() ? "tools has no function to call"
                               : "tool_choice names function '" + std::string(forced) + "', which is not in tools");
  }
  return out;
}

// A GBNF string literal.
std::string lit(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Renames every rule of a GBNF text to prefix + name (definitions and
// references alike), so that several json_schema_to_grammar outputs can live
// in one grammar. Literals, character classes, repetition counts and
// comments are copied untouched.
std::string prefix_rules(const std::string& g, const std::string& prefix) {
  std::string out;
  out.reserve(g.size() * 5 / 4);
  size_t i = 0;
  auto copy_quoted = [&](char close) {
    out += g[i++];
    while (i < g.size() && g[i] != close) {
      if (g[i] == '\\' && i + 1 < g.size()) out += g[i++];
      out += g[i++];
    }
    if (i < g.size()) out += g[i++];
  };
  while (i < g.size()) {
    const char c = g[i];
    if (c == '"') {
      copy_quoted('"');
    } else if (c == '[') {
      copy_quoted(']');
    } else if (c == '{') {
      copy_quoted('}');
    } else if (c == '#') {
      while (i < g.size() && g[i] != '\n') out += g[i++];
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') {
      const size_t b = i;
      while (i < g.size() && (std::isalnum(static_cast<unsigned char>(g[i])) || g[i] == '-' || g[i] == '_')) ++i;
      out += prefix;
      out.append(g, b, i - b);
    } else {
      out += g[i++];
    }
  }
  return out;
}

// The grammar of one JSON value matching `schema`, its rules prefixed; its
// start rule is prefix + "root". Definitions inside a tool's parameters are
// hoisted so that "#/$defs/..." references resolve from the wrapper.
std::string schema_rules(ojson schema, const ojson& defs_from, const std::string& prefix) {
  for (const char* key : {"$defs", "definitions"}) {
    if (defs_from.is_object() && defs_from.contains(key)) schema[key] = defs_from[key];
  }
  grammar::JsonSchemaOptions opt;
  opt.refuse_unenforced = false;  // ignore what cannot be enforced, as llama.cpp does
  return prefix_rules(grammar::json_schema_to_grammar(schema.dump(), opt), prefix);
}

std::string args_rules(const Function& f, const std::string& prefix) {
  return schema_rules(f.parameters, f.parameters, prefix);
}

std::string tag(size_t k) { return "tool" + std::to_string(k) + "-"; }

// Reasoning before forced calls (Qwen 3, DeepSeek R1 think first).
constexpr const char* kThinkRules =
    "tool-think ::= \"<think>\" tool-think-text \"</think>\" tool-ws\n"
    "tool-think-text ::= ( [^<] | \"<\" [^/] )*\n";
constexpr const char* kWsRule = "tool-ws ::= [ \\t\\n]{0,4}\n";
constexpr const char* kSpaceRule = "tool-sp ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

std::string repeat(const std::string& rule, bool parallel) { return parallel ? "( " + rule + " )+" : rule; }

// The optional reasoning before forced calls: a whole <think> block, or with
// the block already opened by the prompt, its rest and "</think>".
std::string think_prefix(bool lazy, const ToolGrammarOptions& o) {
  if (lazy) return "";
  return o.thinking_forced_open ? "( tool-think-text \"</think>\" tool-ws )? " : "tool-think? ";
}

ToolGrammar hermes(const std::vector<Function>& fns, bool lazy, bool parallel, const ToolGrammarOptions& o) {
  ToolGrammar g;
  std::string alts, rules;
  for (size_t k = 0; k < fns.size(); ++k) {
    const ojson schema = {{"type", "object"},
                          {"properties", {{"name", {{"const", fns[k].name}}}, {"arguments", fns[k].parameters}}},
                          {"required", {"name", "arguments"}}};
    rules += schema_rules(schema, fns[k].parameters, tag(k));
    alts += (k ? " | " : "") + tag(k) + "root";
  }
  g.gbnf = "root ::= " + think_prefix(lazy, o) + repeat("tool-call", parallel) + "\n" +
           "tool-call ::= \"<tool_call>\" tool-ws ( " + alts + " ) tool-ws \"</tool_call>\" tool-ws\n" + kWsRule +
           kThinkRules + rules;
  if (lazy) g.trigger_patterns = {"<tool_call>"};
  return g;
}

ToolGrammar llama3(const std::vector<Function>& fns, bool lazy) {
  ToolGrammar g;
  std::string alts, rules;
  for (size_t k = 0; k < fns.size(); ++k) {
    rules += tag(k) + "call ::= " + lit(ojson(fns[k].name).dump()) +
             " tool-sp \",\" tool-sp \"\\\"parameters\\\"\" tool-sp \":\" tool-sp " + tag(k) + "root\n";
    rules += args_rules(fns[k], tag(k));
    alts += (k ? " | " : "") + tag(k) + "call";
  }
  g.gbnf =
      "root ::= \"{\" tool-sp ( \"\\\"type\\\"\" tool-sp \":\" tool-sp \"\\\"function\\\"\" tool-sp \",\" tool-sp )? "
      "\"\\\"name\\\"\" tool-sp \":\" tool-sp ( " +
      alts + " ) tool-sp \"}\" tool-sp\n" + kSpaceRule + rules;
  // A reply that opens like a call object, as llama.cpp's trigger.
  if (lazy) g.trigger_patterns = {R"(^\s*(\{\s*(?:"type"\s*:\s*"function"\s*,\s*)?"name"\s*:\s*")[\s\S]*$)"};
  return g;
}

ToolGrammar mistral(const std::vector<Function>& fns, bool lazy, bool parallel) {
  ToolGrammar g;
  std::string alts, rules;
  for (size_t k = 0; k < fns.size(); ++k) {
    // Nemo's template wants 9-alphanumeric ids.
    const ojson schema = {{"type", "object"},
                          {"properties",
                           {{"name", {{"const", fns[k].name}}},
                            {"arguments", fns[k].parameters},
                            {"id", {{"type", "string"}, {"pattern", "^[a-zA-Z0-9]{9}$"}}}}},
                          {"required", {"name", "arguments", "id"}}};
    rules += schema_rules(schema, fns[k].parameters, tag(k));
    alts += (k ? " | " : "") + tag(k) + "root";
  }
  const std::string item = "( " + alts + " )";
  g.gbnf = "root ::= \"[TOOL_CALLS]\" tool-sp \"[\" tool-sp " + item +
           (parallel ? " ( \",\" tool-sp " + item + " )*" : std::string()) + " \"]\" tool-sp\n" + kSpaceRule + rules;
  if (lazy) g.trigger_patterns = {R"(\[TOOL_CALLS\])"};
  return g;
}

ToolGrammar deepseek(const std::vector<Function>& fns, bool lazy, bool parallel, const ToolGrammarOptions& o) {
  ToolGrammar g;
  std::string alts, rules;
  for (size_t k = 0; k < fns.size(); ++k) {
    rules += tag(k) + "call ::= " + lit("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + fns[k].name + "\n```json\n") +
             " " + tag(k) + "root \"\\n\"? \"```<｜tool▁call▁end｜>\"\n";
    rules += args_rules(fns[k], tag(k));
    alts += (k ? " | " : "") + tag(k) + "call";
  }
  const std::string call = "( " + alts + " )";
  g.gbnf = "root ::= " + think_prefix(lazy, o) + "\"<｜tool▁calls▁begin｜>\" " + call +
           (parallel ? " ( \"\\n\"? " + call + " )*" : std::string()) + " \"<｜tool▁calls▁end｜>\" tool-ws\n" +
           kWsRule + kThinkRules + rules;
  if (lazy) g.trigger_patterns = {"<｜tool▁calls▁begin｜>"};
  return g;
}

ToolGrammar harmony(const std::vector<Function>& fns, bool lazy) {
  ToolGrammar g;
  std::string in_role, in_channel, rules;
  for (size_t k = 0; k < fns.size(); ++k) {
    in_role += std::string(k ? " | " : "") + lit(fns[k].name) + " \"<|channel|>commentary\" harmony-constrain? " +
               "\"<|message|>\" " + tag(k) + "root";
    in_channel +=
        std::string(k ? " | " : "") + lit(fns[k].name) + " harmony-constrain? \"<|message|>\" " + tag(k) + "root";
    rules += args_rules(fns[k], tag(k));
  }
  g.gbnf = "root ::= " + std::string(lazy ? "" : "harmony-analysis? ") + "( harmony-in-role | harmony-in-channel )\n" +
           "harmony-in-role ::= \" to=functions.\" ( " + in_role + " )\n" +
           "harmony-in-channel ::= \"<|channel|>commentary to=functions.\" ( " + in_channel + " )\n" +
           "harmony-constrain ::= \" json\" | \" <|constrain|>json\"\n" +
           "harmony-analysis ::= \"<|channel|>analysis<|message|>\" harmony-text \"<|end|><|start|>assistant\"\n" +
           "harmony-text ::= ( [^<] | \"<\" [^|] )*\n" + rules;
  // The call's recipient, in the role header or in the channel header; the
  // grammar starts at the captured group.
  if (lazy) {
    g.trigger_patterns = {R"(^( to=functions\.)[\s\S]*$)", R"(<\|start\|>assistant( to=functions\.))",
                          R"((<\|channel\|>commentary to=functions\.))"};
  }
  return g;
}

ToolGrammar generic(const std::vector<Function>& fns, bool required, bool parallel) {
  ojson calls = ojson::array();
  ojson defs = ojson::object();
  for (const Function& f : fns) {
    ojson s = {{"type", "object"},
               {"properties", {{"name", {{"type", "string"}, {"const", f.name}}}, {"arguments", f.parameters}}},
               {"required", {"name", "arguments"}}};
    if (parallel) {
      s["properties"]["id"] = {{"type", "string"}, {"minLength", 4}};
      s["required"].push_back("id");
    }
    for (const char* key : {"$defs", "definitions"}) {
      if (f.parameters.contains(key)) {
        for (const auto& [name, d] : f.parameters[key].items()) defs[name] = d;
      }
    }
    calls.push_back(std::move(s));
  }
  const ojson one = calls.size() == 1 ? calls[0] : ojson{{"anyOf", calls}};
  ojson call = parallel ? ojson{{"type", "object"},
                                {"properties", {{"tool_calls", {{"type", "array"}, {"items", one}, {"minItems", 1}}}}},
                                {"required", {"tool_calls"}}}
                        : ojson{{"type", "object"}, {"properties", {{"tool_call", one}}}, {"required", {"tool_call"}}};
  ojson schema = required ? call
                          : ojson{{"anyOf",
                                   {call,
                                    {{"type", "object"},
                                     {"properties", {{"response", {{"type", "string"}}}}},
                                     {"required", {"response"}}}}}};
  if (!defs.empty()) schema["$defs"] = defs;
  grammar::JsonSchemaOptions opt;
  opt.refuse_unenforced = false;
  ToolGrammar g;
  g.gbnf = grammar::json_schema_to_grammar(schema.dump(), opt);
  return g;
}

}  // namespace

ToolGrammar tool_call_grammar(ToolFormat format, const nlohmann::ordered_json& tools, std::string_view forced_name,
                              bool required, bool parallel) {
  return tool_call_grammar(format, tools, forced_name, required, parallel, ToolGrammarOptions{});
}

ToolGrammar tool_call_grammar(ToolFormat format, const nlohmann::ordered_json& tools, std::string_view forced_name,
                              bool required, bool parallel, const ToolGrammarOptions& options) {
  const std::vector<Function> fns = functions(tools, forced_name);
  const bool forced = required || !forced_name.empty();
  ToolGrammar g;
  switch (format) {
    case ToolFormat::kNone:
      throw Refusal("the chat template has no tool-call format, so tool calls cannot be constrained");
    case ToolFormat::kGeneric:
      return generic(fns, forced, parallel);  // the whole reply is JSON: never lazy
    case ToolFormat::kHermes:
      g = hermes(fns, !forced, parallel, options);
      break;
    case ToolFormat::kLlama3Json:
      g = llama3(fns, !forced);  // one call per reply (Llama 3.1's template refuses more)
      break;
    case ToolFormat::kMistral:
      g = mistral(fns, !forced, parallel);
      break;
    case ToolFormat::kDeepSeekV3:
      g = deepseek(fns, !forced, parallel, options);
      break;
    case ToolFormat::kHarmony:
      g = harmony(fns, !forced);  // one call per message
      break;
  }
  g.lazy = !forced;
  return g;
}

}  // namespace strix::chat
