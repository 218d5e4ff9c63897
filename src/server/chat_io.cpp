#include "server/chat_io.h"

#include <map>
#include <mutex>
#include <utility>

#include "chat/chat_template.h"
#include "chat/jinja_value.h"
#include "chat/tool_polyfill.h"
#include "core/error.h"
#include "sampling/think_budget.h"
#include "server/api_error.h"

namespace strix::server {

using json = nlohmann::json;

namespace {

using ojson = nlohmann::ordered_json;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void check_tools(const ChatCall& call) {
  const std::string& f = call.tools_field;
  if (!call.tools.is_array()) throw ApiError(400, "'" + f + "' must be an array", f);
  for (size_t i = 0; i < call.tools.size(); ++i) {
    const ojson& t = call.tools[i];
    const std::string where = f + "[" + std::to_string(i) + "]";
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") ||
        !t.at("function").is_object() || !t.at("function").contains("name") ||
        !t.at("function").at("name").is_string() || t.at("function").at("name").get<std::string>().empty()) {
      throw ApiError(400, where + " must be a function tool with a name", where);
    }
    const ojson& fn = t.at("function");
    if (fn.contains("parameters") && !fn.at("parameters").is_object() && !fn.at("parameters").is_null()) {
      throw ApiError(400, where + ": the parameters must be a JSON schema object", where);
    }
  }
}

// Templates read tool-call arguments as a mapping (HF's convention); the APIs
// carry JSON text, parsed in its own key order (as llama.cpp's ordered JSON).
ojson template_messages(ojson out) {
  for (ojson& m : out) {
    if (!m.contains("tool_calls") || !m.at("tool_calls").is_array()) continue;
    for (ojson& tc : m.at("tool_calls")) {
      if (!tc.contains("function") || !tc.at("function").is_object()) continue;
      ojson& fn = tc.at("function");
      if (fn.contains("arguments") && fn.at("arguments").is_string()) {
        const ojson a = ojson::parse(fn.at("arguments").get<std::string>(), nullptr, false);
        if (!a.is_discarded() && a.is_object()) fn["arguments"] = a;
      }
    }
  }
  return out;
}

// The template's probed capabilities, once per template (probing renders it
// a few times).
const chat::TemplatePolyfill& polyfill_for(const std::string& tmpl, const std::string& bos, const std::string& eos) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<chat::TemplatePolyfill>> cache;
  const std::string key = tmpl + '\0' + bos + '\0' + eos;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<chat::TemplatePolyfill>(tmpl, bos, eos);
  return *slot;
}

// llama.cpp's generic format, for every template without a native one: its
// system line first, then minja's polyfills for what the template cannot
// render (Gemma's or a plain ChatML one renders no tools, calls or tool
// results: they become system text and JSON message contents).
ojson generic_messages(const json& messages, const ojson& tools, const std::string& tmpl, const std::string& bos,
                       const std::string& eos) {
  const ojson with_system = chat::add_system(ojson::parse(messages.dump()), chat::kGenericSystem);
  return polyfill_for(tmpl, bos, eos).apply(with_system, tools);
}

// The tools as llama.cpp hands them to templates and grammars
// (common_chat_tools_to_json_oaicompat): {"type": "function", "function":
// {"name", "description", "parameters"}} in that order, other fields dropped.
ojson canonical_tools(const ojson& tools) {
  ojson out = ojson::array();
  for (const ojson& t : tools) {
    const ojson& f = t.at("function");
    ojson fn = {{"name", f.at("name")}};
    if (f.contains("description")) fn["description"] = f.at("description");
    if (f.contains("parameters") && !f.at("parameters").is_null()) fn["parameters"] = f.at("parameters");
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

}  // namespace

void order_tool_schemas(ChatCall& call, const std::string& body, std::initializer_list<const char*> path) {
  const ojson b = ojson::parse(body, nullptr, false);
  if (b.is_discarded() || !b.is_object() || !b.contains("tools") || !b.at("tools").is_array()) return;
  const ojson& tools = b.at("tools");
  for (size_t i = 0; i < call.tools.size() && i < tools.size(); ++i) {
    const ojson* at = &tools[i];
    for (const char* k : path) {
      at = at->is_object() && at->contains(k) ? &at->at(k) : nullptr;
      if (at == nullptr) break;
    }
    ojson& t = call.tools[i];
    if (at == nullptr || !at->is_object() || !t.is_object() || !t.contains("function") ||
        !t.at("function").is_object() || !t.at("function").contains("parameters")) {
      continue;
    }
    // the same schema, only its key order differs
    if (json::parse(at->dump()) == json::parse(t.at("function").at("parameters").dump())) {
      t["function"]["parameters"] = *at;
    }
  }
}

ChatPlan plan_chat(const ChatEnv& env, const ChatCall& call) {
  if (env.tmpl.empty()) {
    throw ApiError(400,
                   "this model has no chat template (tokenizer.chat_template); start the server with "
                   "--chat-template");
  }
  ChatPlan plan;
  check_tools(call);
  const bool has_tools = !call.tools.empty();
  if (has_tools && env.format == chat::ToolFormat::kNone) {
    throw ApiError(400,
                   "'" + call.tools_field +
                       "': this model's chat template uses a tool-call format of llama.cpp's that Strix does not "
                       "implement (Command R7B, Functionary or FireFunction), so tools are not implemented for it",
                   call.tools_field);
  }
  plan.tools_active = has_tools && call.tool_choice != "none";
  if (!call.forced_name.empty()) {
    bool found = false;
    for (const ojson& t : call.tools) found = found || t.at("function").at("name") == call.forced_name;
    if (!found) {
      throw ApiError(400, "tool_choice names '" + call.forced_name + "', which is not among the tools", "tool_choice");
    }
  }
  if ((call.tool_choice == "required" || !call.forced_name.empty()) && !has_tools) {
    throw ApiError(400, "tool_choice requires a tool call but no tools were given", "tool_choice");
  }

  const ojson tools = canonical_tools(call.tools);
  chat::ChatInputs in;
  const auto& v = env.tk->vocab();
  if (v.bos != tok::kNoToken) in.bos_token = env.tk->token_to_piece(v.bos, true);
  if (v.eos != tok::kNoToken) in.eos_token = env.tk->token_to_piece(v.eos, true);
  try {
    const bool generic = plan.tools_active && env.format == chat::ToolFormat::kGeneric;
    const ojson messages = generic ? generic_messages(call.messages, tools, env.tmpl, in.bos_token, in.eos_token)
                                   : ojson::parse(call.messages.dump());
    in.messages = jinja::parse_json(template_messages(messages).dump());
    if (plan.tools_active) in.tools = jinja::parse_json(tools.dump());
    for (const auto& [k, v] : call.template_kwargs.items()) in.kwargs.emplace_back(k, jinja::parse_json(v.dump()));
  } catch (const std::exception& e) {
    throw ApiError(400, std::string("the messages cannot be given to the template: ") + e.what(), "messages");
  }
  in.add_generation_prompt = true;
  try {
    plan.prompt = chat::apply_chat_template(env.tmpl, in);
  } catch (const std::exception& e) {
    throw ApiError(400, std::string("the chat template failed: ") + e.what(), "messages");
  }
  if (sampling::template_thinks(env.tmpl)) {
    in.add_generation_prompt = false;
    try {
      const std::string bare = chat::apply_chat_template(env.tmpl, in);
      size_t n = 0;
      while (n < bare.size() && n < plan.prompt.size() && bare[n] == plan.prompt[n]) ++n;
      plan.generation_prompt = plan.prompt.substr(n);
    } catch (const std::exception&) {
      // a template that insists on the generation prompt: the budget starts unprimed
    }
  }

  plan.parse.format = env.format;
  plan.parse.parse_tool_calls = plan.tools_active;
  plan.parse.extract_reasoning = env.extract_reasoning;
  plan.parse.thinking_forced_open = ends_with(plan.prompt, "<think>") || ends_with(plan.prompt, "<think>\n");
  const bool reasoning_model = env.tmpl.find("<think>") != std::string::npos ||
                               env.format == chat::ToolFormat::kHarmony || plan.parse.thinking_forced_open;
  plan.parse_output = plan.tools_active || (env.extract_reasoning && reasoning_model);

  if (plan.tools_active) {
    const bool required = call.tool_choice == "required" || !call.forced_name.empty();
    try {
      const chat::ToolGrammar tg =
          chat::tool_call_grammar(env.format, tools, call.forced_name, required, call.parallel);
      plan.grammar = tg.gbnf;
      plan.grammar_lazy = tg.lazy;
      plan.grammar_triggers = tg.trigger_patterns;
    } catch (const Error& e) {
      throw ApiError(400, "'" + call.tools_field + "': " + e.what(), call.tools_field);
    }
  }
  return plan;
}

chat::ParsedMessage parse_output(const ChatPlan& plan, const std::string& text) {
  if (!plan.parse_output) {
    chat::ParsedMessage m;
    m.content = text;
    return m;
  }
  return chat::parse_reply(text, plan.parse);
}

ChatStream::ChatStream(const ChatPlan& plan) {
  if (plan.parse_output) parser_ = std::make_unique<chat::StreamParser>(plan.parse);
}

std::vector<chat::StreamDelta> ChatStream::count(std::vector<chat::StreamDelta> d) {
  for (const auto& x : d) {
    if (x.tool_index >= 0 && x.tool_index + 1 > tool_calls_) tool_calls_ = x.tool_index + 1;
  }
  return d;
}

std::vector<chat::StreamDelta> ChatStream::feed(const std::string& piece) {
  if (parser_) return count(parser_->feed(piece));
  std::vector<chat::StreamDelta> out;
  if (!piece.empty()) {
    out.emplace_back();
    out.back().content = piece;
  }
  return out;
}

std::vector<chat::StreamDelta> ChatStream::finish() {
  if (parser_) return count(parser_->finish());
  return {};
}

void Blocks::open(std::vector<BlockEvent>& out, BlockEvent::Type t, int tool, const std::string& id,
                  const std::string& name) {
  for (auto& e : close()) out.push_back(std::move(e));
  open_ = true;
  type_ = t;
  tool_ = tool;
  text_.clear();
  BlockEvent e{BlockEvent::Kind::kOpen, t, next_++, id, name, ""};
  out.push_back(std::move(e));
}

void Blocks::delta(std::vector<BlockEvent>& out, const std::string& text) {
  if (text.empty()) return;
  text_ += text;
  out.push_back(BlockEvent{BlockEvent::Kind::kDelta, type_, next_ - 1, "", "", text});
}

std::vector<BlockEvent> Blocks::on(const chat::StreamDelta& d) {
  std::vector<BlockEvent> out;
  using T = BlockEvent::Type;
  if (!d.reasoning_content.empty()) {
    if (!open_ || type_ != T::kReasoning) open(out, T::kReasoning, -1, "", "");
    delta(out, d.reasoning_content);
  }
  if (!d.content.empty()) {
    if (!open_ || type_ != T::kText) open(out, T::kText, -1, "", "");
    delta(out, d.content);
  }
  if (d.tool_index >= 0) {
    if (!open_ || type_ != T::kTool || tool_ != d.tool_index) open(out, T::kTool, d.tool_index, d.tool_id, d.tool_name);
    delta(out, d.arguments);
  }
  return out;
}

std::vector<BlockEvent> Blocks::close() {
  std::vector<BlockEvent> out;
  if (!open_) return out;
  open_ = false;
  out.push_back(BlockEvent{BlockEvent::Kind::kClose, type_, next_ - 1, "", "", text_});
  return out;
}

}  // namespace strix::server
