// Anthropic's Messages API: POST /v1/messages (streaming or not) and
// /v1/messages/count_tokens. The request becomes OpenAI-shaped messages for
// the chat template (tool_use blocks -> assistant tool_calls, tool_result
// blocks -> "tool" messages); the reply is parsed by the same tool-call /
// reasoning parser and returned as content blocks (thinking, text, tool_use).
// Errors use Anthropic's shape (Routes::handle words them by path).
#include <cstdint>
#include <ctime>
#include <memory>
#include <utility>

#include "server/api_common.h"
#include "server/api_error.h"
#include "server/reasoning.h"
#include "server/request_fields.h"
#include "server/routes.h"

namespace strix::server {

namespace {

std::string text_blocks(const json& c, const std::string& where) {
  return text_parts(c, where, {"text"}, {"type", "text", "cache_control"}, "content blocks");
}

// Claude Code's system prompt starts with a billing header whose cch=XXXXX
// stamp changes on every request, so no prefix would ever be reused from the
// cache; the stamp becomes fffff, as llama-server does (its PR 21793).
std::string normalize_billing_header(std::string s) {
  static const std::string head = "x-anthropic-billing-header:";
  if (s.rfind(head, 0) != 0) return s;
  const size_t at = s.find("cch=", head.size());
  if (at == std::string::npos) return s;
  const size_t v = at + 4;
  if (v + 5 < s.size() && s[v + 5] == ';') s.replace(v, 5, "fffff");
  return s;
}

// The system prompt: a string or text blocks, joined with nothing (as
// llama.cpp joins them), each block's billing header normalized.
std::string system_text(const json& sys) {
  const std::string joined = text_blocks(sys, "system");  // checks the blocks
  if (sys.is_string()) return normalize_billing_header(joined);
  std::string out;
  for (const json& blk : sys) out += normalize_billing_header(blk.at("text").get<std::string>());
  return out;
}

json template_kwargs(const json& b) {
  if (!has_field(b, "chat_template_kwargs")) return json::object();
  if (!b.at("chat_template_kwargs").is_object()) {
    throw ApiError(400, "chat_template_kwargs: must be an object", "chat_template_kwargs");
  }
  return b.at("chat_template_kwargs");
}

// A plain-text `document` block (source.type "text", or "content" holding
// text blocks) as the text the model reads: its title, its context and its
// text, each a paragraph ("\n\n" between them). Other sources (base64 PDF,
// url, file) are not text: a 400 naming the block, this model is text-only.
std::string document_text(const json& blk, const std::string& w) {
  check_fields(blk, {"type", "source", "title", "context", "citations", "cache_control"}, {}, w + ".");
  if (has_field(blk, "citations")) {
    const json& c = blk.at("citations");
    if (!c.is_object()) throw ApiError(400, w + ".citations: must be an object", w + ".citations");
    check_fields(c, {"enabled"}, {}, w + ".citations.");
    if (get_bool(c, "enabled", false)) {
      throw ApiError(400, w + ".citations: citations are not implemented", w + ".citations.enabled");
    }
  }
  if (!has_field(blk, "source") || !blk.at("source").is_object()) {
    throw ApiError(400, w + ".source: Field required (an object)", w + ".source");
  }
  const json& src = blk.at("source");
  const std::string st = get_string(src, "type", "");
  std::string body;
  if (st == "text") {
    check_fields(src, {"type", "media_type", "data"}, {}, w + ".source.");
    const std::string mt = get_string(src, "media_type", "text/plain");
    if (mt != "text/plain") {
      throw ApiError(400, w + ".source.media_type: must be text/plain for a text document", w + ".source.media_type");
    }
    if (!has_field(src, "data") || !src.at("data").is_string()) {
      throw ApiError(400, w + ".source.data: Field required (a string)", w + ".source.data");
    }
    body = src.at("data").get<std::string>();
  } else if (st == "content") {
    check_fields(src, {"type", "content"}, {}, w + ".source.");
    if (!src.contains("content")) throw ApiError(400, w + ".source.content: Field required", w + ".source.content");
    body = text_parts(src.at("content"), w + ".source.content", {"text"},
                      {"type", "text", "cache_control", "citations"}, "content blocks");
  } else {
    throw ApiError(400,
                   w + ": 'document' content blocks with a source of type '" + st +
                       "' are not supported: this model is text-only (only text documents are read)",
                   w + ".source.type");
  }
  std::string out;
  for (const char* k : {"title", "context"}) {
    const std::string v = get_string(blk, k, "");
    if (!v.empty()) out += v + "\n\n";
  }
  return out + body;
}

// Anthropic messages, system and tools as a ChatCall.
ChatCall anthropic_chat_call(const json& b) {
  ChatCall call;
  call.tools_field = "tools";
  if (has_field(b, "system")) {
    call.messages.push_back({{"role", "system"}, {"content", system_text(b.at("system"))}});
  }
  if (!has_field(b, "messages") || !b.at("messages").is_array() || b.at("messages").empty()) {
    throw ApiError(400, "messages: must be a non-empty array", "messages");
  }
  const json& msgs = b.at("messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string where = "messages." + std::to_string(i);
    const json& m = msgs[i];
    if (!m.is_object()) throw ApiError(400, where + ": must be an object", where);
    check_fields(m, {"role", "content"}, {}, where + ".");
    const std::string role = get_string(m, "role", "");
    if (role != "user" && role != "assistant") throw ApiError(400, where + ".role: must be user or assistant", where);
    if (!m.contains("content")) throw ApiError(400, where + ".content: Field required", where + ".content");
    const json& c = m.at("content");
    if (c.is_string()) {
      call.messages.push_back({{"role", role}, {"content", c.get<std::string>()}});
      continue;
    }
    if (!c.is_array()) throw ApiError(400, where + ".content: must be a string or an array of blocks", where);
    std::string text, thinking;
    bool after_document = false, has_text = false;
    json tool_calls = json::array();
    for (size_t j = 0; j < c.size(); ++j) {
      const std::string w = where + ".content." + std::to_string(j);
      const json& blk = c[j];
      if (!blk.is_object()) throw ApiError(400, w + ": must be an object", w);
      const std::string type = blk.value("type", "");
      if (type == "text") {
        // text blocks are joined by a line break, as llama.cpp joins the typed text parts it makes of them
        check_fields(blk, {"type", "text", "cache_control", "citations"}, {}, w + ".");
        if (after_document) {
          text += "\n\n";
        } else if (!text.empty()) {
          text += "\n";
        }
        after_document = false;
        has_text = true;
        text += get_string(blk, "text", "");
      } else if (type == "thinking" && role == "assistant") {
        check_fields(blk, {"type", "thinking", "signature"}, {}, w + ".");
        thinking += get_string(blk, "thinking", "");
      } else if (type == "tool_use" && role == "assistant") {
        check_fields(blk, {"type", "id", "name", "input", "cache_control"}, {}, w + ".");
        const json input = blk.value("input", json::object());
        if (!input.is_object()) throw ApiError(400, w + ".input: must be an object", w + ".input");
        tool_calls.push_back({{"id", get_string(blk, "id", "")},
                              {"type", "function"},
                              {"function", {{"name", get_string(blk, "name", "")}, {"arguments", input.dump()}}}});
      } else if (type == "image") {
        throw ApiError(400,
                       w + ": 'image' content blocks are not supported: this model is text-only (Strix has no "
                           "vision encoder)",
                       w + ".type");
      } else if (type == "document" && role == "user") {
        // a paragraph of its own: "\n\n" before it and before the text block after it
        if (!text.empty()) text += "\n\n";
        text += document_text(blk, w);
        after_document = true;
        has_text = true;
      } else if (type == "tool_result" && role == "user") {
        check_fields(blk, {"type", "tool_use_id", "content", "is_error", "cache_control"}, {}, w + ".");
        if (blk.contains("content") && blk.at("content").is_array()) {
          for (size_t k = 0; k < blk.at("content").size(); ++k) {
            const json& part = blk.at("content")[k];
            const std::string pt = part.is_object() ? part.value("type", "") : "";
            if (pt == "image" || pt == "document") {
              const std::string wk = w + ".content." + std::to_string(k);
              throw ApiError(400,
                             wk + ": '" + pt + "' blocks in a tool_result are not supported: this model is text-only",
                             wk + ".type");
            }
          }
        }
        const std::string out = blk.contains("content") ? text_blocks(blk.at("content"), w + ".content") : "";
        call.messages.push_back(
            {{"role", "tool"}, {"tool_call_id", get_string(blk, "tool_use_id", "")}, {"content", out}});
      } else {
        throw ApiError(400, w + ": content blocks of type '" + type + "' are not implemented for " + role + " messages",
                       w + ".type");
      }
    }
    if (role == "assistant") {
      json a = {{"role", "assistant"}, {"content", text}};
      if (!tool_calls.empty()) a["tool_calls"] = tool_calls;
      if (!thinking.empty()) a["reasoning_content"] = thinking;
      call.messages.push_back(a);
    } else if (has_text) {
      call.messages.push_back({{"role", "user"}, {"content", text}});
    }
  }
  if (has_field(b, "tools")) {
    const json& tools = b.at("tools");
    if (!tools.is_array()) throw ApiError(400, "tools: must be an array", "tools");
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string w = "tools." + std::to_string(i);
      const json& t = tools[i];
      if (!t.is_object()) throw ApiError(400, w + ": must be an object", w);
      check_fields(t, {"name", "description", "input_schema", "type", "cache_control"}, {}, w + ".");
      if (has_field(t, "type") && t.at("type") != "custom") {
        throw ApiError(400, w + ": server tools (type '" + t.at("type").dump() + "') are not implemented", w + ".type");
      }
      json fn = {{"name", get_string(t, "name", "")}, {"parameters", t.value("input_schema", json::object())}};
      if (has_field(t, "description")) fn["description"] = get_string(t, "description", "");
      call.tools.push_back({{"type", "function"}, {"function", fn}});
    }
  }
  if (has_field(b, "tool_choice")) {
    const json& tc = b.at("tool_choice");
    if (!tc.is_object()) throw ApiError(400, "tool_choice: must be an object", "tool_choice");
    check_fields(tc, {"type", "name", "disable_parallel_tool_use"}, {}, "tool_choice.");
    const std::string type = get_string(tc, "type", "");
    if (type == "auto") {
      call.tool_choice = "auto";
    } else if (type == "any") {
      call.tool_choice = "required";
    } else if (type == "none") {
      call.tool_choice = "none";
    } else if (type == "tool") {
      call.tool_choice = "required";
      call.forced_name = get_string(tc, "name", "");
      if (call.forced_name.empty()) throw ApiError(400, "tool_choice.name: required for type tool", "tool_choice");
    } else {
      throw ApiError(400, "tool_choice.type: must be auto, any, tool or none", "tool_choice.type");
    }
    call.parallel = !get_bool(tc, "disable_parallel_tool_use", false);
  }
  call.template_kwargs = template_kwargs(b);
  return call;
}

const char* stop_reason(Finish f, bool tools) {
  if (f == Finish::kLimit) return "max_tokens";
  if (f == Finish::kWord) return "stop_sequence";
  return tools ? "tool_use" : "end_turn";
}

// tool_use inputs given back in the history keep the client's key order, as
// in llama.cpp (its JSON is ordered): the ChatCall was built from the
// key-sorted parse, so each call's arguments become the ordered input's text.
void order_tool_use_inputs(ChatCall& call, const std::string& body) {
  using ojson = nlohmann::ordered_json;
  const ojson b = ojson::parse(body, nullptr, false);
  if (b.is_discarded() || !b.is_object() || !b.contains("messages") || !b.at("messages").is_array()) return;
  std::vector<const ojson*> inputs;  // one per tool_use block, in order; null without an input
  for (const ojson& m : b.at("messages")) {
    if (!m.is_object() || m.value("role", "") != "assistant" || !m.contains("content") || !m.at("content").is_array()) {
      continue;
    }
    for (const ojson& blk : m.at("content")) {
      if (blk.is_object() && blk.value("type", "") == "tool_use") {
        inputs.push_back(blk.contains("input") ? &blk.at("input") : nullptr);
      }
    }
  }
  size_t k = 0;
  for (json& m : call.messages) {
    if (!m.contains("tool_calls")) continue;
    for (json& tc : m.at("tool_calls")) {
      if (k >= inputs.size()) return;
      const ojson* in = inputs[k++];
      json& args = tc["function"]["arguments"];
      // the same object, only its key order differs
      if (in != nullptr && json::parse(in->dump()) == json::parse(args.get<std::string>())) args = in->dump();
    }
  }
}

json tool_input(const std::string& args) {
  const json j = json::parse(args, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// The prompt of a Messages request (body b, raw text for the tools' key order):
// its `thinking` field, when given, replaces the server's budget in `think`.
ChatPlan anthropic_plan(const json& b, const std::string& text, int64_t max_tokens, const ChatEnv& env,
                        ThinkBudget& think) {
  if (has_field(b, "thinking")) think = anthropic_thinking(b.at("thinking"), max_tokens, think);
  ChatCall call = anthropic_chat_call(b);
  order_tool_schemas(call, text, {"input_schema"});
  order_tool_use_inputs(call, text);
  apply_thinking_switch(call, think, env);
  return plan_chat(env, call);
}

}  // namespace

HttpReply Routes::count_tokens_anthropic(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"model", "messages", "system", "tools", "tool_choice", "chat_template_kwargs", "thinking"});
  ThinkBudget think{cfg_.reasoning_budget, cfg_.reasoning_budget_message};
  const ChatPlan plan = anthropic_plan(b, text, INT64_MAX, chat_, think);
  const auto ids = tk_.tokenize(plan.prompt, true, true);
  return json_reply({{"input_tokens", ids.size()}});
}

HttpReply Routes::messages_anthropic(const std::string& text) {
  const json b = parse_body(text);
  // chat_template_kwargs: llama-server's extension (e.g. {"enable_thinking": false}).
  check_fields(b, {"model", "messages", "system", "max_tokens", "metadata", "stop_sequences", "stream", "temperature",
                   "top_p", "top_k", "tools", "tool_choice", "chat_template_kwargs", "thinking"});
  if (!has_field(b, "max_tokens")) throw ApiError(400, "max_tokens: Field required", "max_tokens");
  const int64_t max_tokens = get_int(b, "max_tokens", 0);
  if (max_tokens < 1) throw ApiError(400, "max_tokens: must be at least 1", "max_tokens");
  if (has_field(b, "metadata")) {
    if (!b.at("metadata").is_object()) throw ApiError(400, "metadata: must be an object", "metadata");
    check_fields(b.at("metadata"), {"user_id"}, {}, "metadata.");
  }
  // thinking: disabled renders with enable_thinking = false; enabled runs the budget sampler (server/reasoning.h)
  ThinkBudget think{cfg_.reasoning_budget, cfg_.reasoning_budget_message};
  const ChatPlan plan = anthropic_plan(b, text, max_tokens, chat_, think);
  json sb = json::object();
  for (const char* k : {"temperature", "top_p", "top_k"}) {
    if (has_field(b, k)) sb[k] = b.at(k);
  }
  sampling::Params params = sampling_params(sb);
  params.grammar = plan.grammar;
  params.grammar_lazy = plan.grammar_lazy;
  params.grammar_trigger_patterns = plan.grammar_triggers;
  apply_think_budget(params, chat_, plan, think);
  const std::vector<std::string> stops = get_strings(b, "stop_sequences");
  GenRequest g = make_request(tk_, plan.prompt, json::object(), {cfg_.n_ctx, max_tokens}, params, stops);
  const int32_t n_prompt = static_cast<int32_t>(g.prompt.size());
  const bool stream = get_bool(b, "stream", false);
  HttpReply r;
  r.streams.push_back(engine_.submit(std::move(g)));
  const std::string id = random_id("msg_"), model = cfg_.alias;
  if (!stream) {
    r.on_done = [id, model, plan](std::vector<GenResult>& res) {
      const GenEvent& e = res[0].last;
      if (e.finish == Finish::kError) {
        return json_reply({{"type", "error"}, {"error", {{"type", "api_error"}, {"message", e.error}}}}, 500);
      }
      const chat::ParsedMessage pm = parse_output(plan, res[0].text);
      json content = json::array();
      if (!pm.reasoning_content.empty()) {
        content.push_back({{"type", "thinking"}, {"thinking", pm.reasoning_content}, {"signature", ""}});
      }
      if (!pm.content.empty() || pm.tool_calls.empty()) content.push_back({{"type", "text"}, {"text", pm.content}});
      for (const chat::ToolCall& c : pm.tool_calls) {
        content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", tool_input(c.arguments)}});
      }
      return json_reply({{"id", id},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"model", model},
                         {"content", content},
                         {"stop_reason", stop_reason(e.finish, !pm.tool_calls.empty())},
                         {"stop_sequence", e.finish == Finish::kWord ? json(e.stop_word) : json(nullptr)},
                         {"usage",
                          {{"input_tokens", e.n_prompt - e.n_cached},
                           {"output_tokens", e.n_gen},
                           {"cache_creation_input_tokens", 0},
                           {"cache_read_input_tokens", e.n_cached}}}});
    };
    return r;
  }
  r.sse = true;
  r.sse_head = sse_event("message_start", {{"type", "message_start"},
                                           {"message",
                                            {{"id", id},
                                             {"type", "message"},
                                             {"role", "assistant"},
                                             {"model", model},
                                             {"content", json::array()},
                                             {"stop_reason", nullptr},
                                             {"stop_sequence", nullptr},
                                             {"usage", {{"input_tokens", n_prompt}, {"output_tokens", 0}}}}}}) +
               sse_event("ping", {{"type", "ping"}});
  struct State {
    ChatStream parser;
    Blocks blocks;
    explicit State(const ChatPlan& p) : parser(p) {}
  };
  auto st = std::make_shared<State>(plan);
  r.on_event = [st](size_t, const GenEvent& e) -> std::string {
    if (e.done && e.finish == Finish::kError) {
      return sse_event("error", {{"type", "error"}, {"error", {{"type", "api_error"}, {"message", e.error}}}});
    }
    std::vector<chat::StreamDelta> deltas = st->parser.feed(e.text);
    if (e.done) {
      for (auto& d : st->parser.finish()) deltas.push_back(std::move(d));
    }
    std::vector<BlockEvent> evs;
    for (const auto& d : deltas) {
      for (auto& x : st->blocks.on(d)) evs.push_back(std::move(x));
    }
    if (e.done) {
      if (st->blocks.count() == 0) {
        // an empty reply still has one (empty) text block
        chat::StreamDelta d;
        d.content = " ";
        auto opened = st->blocks.on(d);
        evs.push_back(opened[0]);
      }
      for (auto& x : st->blocks.close()) evs.push_back(std::move(x));
    }
    std::string out;
    using K = BlockEvent::Kind;
    using T = BlockEvent::Type;
    for (const BlockEvent& x : evs) {
      if (x.kind == K::kOpen) {
        json cb;
        if (x.type == T::kText) cb = {{"type", "text"}, {"text", ""}};
        if (x.type == T::kReasoning) cb = {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}};
        if (x.type == T::kTool) cb = {{"type", "tool_use"}, {"id", x.id}, {"name", x.name}, {"input", json::object()}};
        out += sse_event("content_block_start",
                         {{"type", "content_block_start"}, {"index", x.index}, {"content_block", cb}});
      } else if (x.kind == K::kDelta) {
        json d;
        if (x.type == T::kText) d = {{"type", "text_delta"}, {"text", x.text}};
        if (x.type == T::kReasoning) d = {{"type", "thinking_delta"}, {"thinking", x.text}};
        if (x.type == T::kTool) d = {{"type", "input_json_delta"}, {"partial_json", x.text}};
        out += sse_event("content_block_delta", {{"type", "content_block_delta"}, {"index", x.index}, {"delta", d}});
      } else {
        out += sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", x.index}});
      }
    }
    if (e.done) {
      out += sse_event("message_delta",
                       {{"type", "message_delta"},
                        {"delta",
                         {{"stop_reason", stop_reason(e.finish, st->parser.saw_tool_call())},
                          {"stop_sequence", e.finish == Finish::kWord ? json(e.stop_word) : json(nullptr)}}},
                        {"usage",
                         {{"input_tokens", e.n_prompt - e.n_cached},
                          {"output_tokens", e.n_gen},
                          {"cache_read_input_tokens", e.n_cached}}}});
      out += sse_event("message_stop", {{"type", "message_stop"}});
    }
    return out;
  };
  return r;
}

}  // namespace strix::server
