// OpenAI's Responses API, stateless: POST /v1/responses with input (a string
// or message / function_call / function_call_output items), instructions,
// function tools, tool_choice, max_output_tokens, text.format, streaming with
// the response.* events. Nothing is stored: previous_response_id, store: true
// and the other stateful or hosted features are refused by name.
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

// Several text parts are one text with a line break between them, as
// llama.cpp hands typed parts to a template that takes string content.
std::string item_text(const json& c, const std::string& where) {
  return text_parts(c, where, {"input_text", "output_text"}, {"type", "text", "annotations", "logprobs"},
                    "content parts", "\n");
}

ChatCall responses_chat_call(const json& b) {
  ChatCall call;
  if (has_field(b, "instructions")) {
    call.messages.push_back({{"role", "system"}, {"content", get_string(b, "instructions", "")}});
  }
  if (!has_field(b, "input")) throw ApiError(400, "'input' is required", "input");
  const json& in = b.at("input");
  if (in.is_string()) {
    call.messages.push_back({{"role", "user"}, {"content", in.get<std::string>()}});
  } else if (in.is_array()) {
    for (size_t i = 0; i < in.size(); ++i) {
      const std::string w = "input[" + std::to_string(i) + "]";
      const json& it = in[i];
      if (!it.is_object()) throw ApiError(400, w + " must be an object", w);
      const std::string type = it.value("type", "message");
      if (type == "message") {
        check_fields(it, {"type", "role", "content", "id", "status"}, {}, w + ".");
        std::string role = get_string(it, "role", "");
        if (role == "developer") role = "system";
        if (role != "user" && role != "assistant" && role != "system") {
          throw ApiError(400, w + ".role must be user, assistant, system or developer", w + ".role");
        }
        call.messages.push_back(
            {{"role", role}, {"content", item_text(it.value("content", json("")), w + ".content")}});
      } else if (type == "function_call") {
        check_fields(it, {"type", "call_id", "name", "arguments", "id", "status"}, {}, w + ".");
        const json tc = {
            {"id", get_string(it, "call_id", "")},
            {"type", "function"},
            {"function", {{"name", get_string(it, "name", "")}, {"arguments", get_string(it, "arguments", "{}")}}}};
        json& msgs = call.messages;
        if (!msgs.empty() && msgs.back()["role"] == "assistant") {
          if (!msgs.back().contains("tool_calls")) msgs.back()["tool_calls"] = json::array();
          msgs.back()["tool_calls"].push_back(tc);
        } else {
          msgs.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array({tc})}});
        }
      } else if (type == "function_call_output") {
        check_fields(it, {"type", "call_id", "output", "id", "status"}, {}, w + ".");
        call.messages.push_back({{"role", "tool"},
                                 {"tool_call_id", get_string(it, "call_id", "")},
                                 {"content", get_string(it, "output", "")}});
      } else if (type == "reasoning") {
        // earlier reasoning given back by a client: templates drop past reasoning, so does Strix
        check_fields(it, {"type", "id", "summary", "content", "encrypted_content", "status"}, {}, w + ".");
      } else {
        throw ApiError(400, w + ": input items of type '" + type + "' are not implemented", w + ".type");
      }
    }
  } else {
    throw ApiError(400, "'input' must be a string or an array of items", "input");
  }
  if (call.messages.empty()) throw ApiError(400, "'input' holds no messages", "input");
  if (has_field(b, "tools")) {
    const json& tools = b.at("tools");
    if (!tools.is_array()) throw ApiError(400, "'tools' must be an array", "tools");
    for (size_t i = 0; i < tools.size(); ++i) {
      const std::string w = "tools[" + std::to_string(i) + "]";
      const json& t = tools[i];
      if (!t.is_object() || t.value("type", "") != "function") {
        throw ApiError(400, w + ": only function tools are implemented (hosted tools are not)", w + ".type");
      }
      check_fields(t, {"type", "name", "description", "parameters", "strict"}, {}, w + ".");
      json fn = {{"name", get_string(t, "name", "")}, {"parameters", t.value("parameters", json::object())}};
      if (has_field(t, "description")) fn["description"] = get_string(t, "description", "");
      call.tools.push_back({{"type", "function"}, {"function", fn}});
    }
  }
  if (has_field(b, "tool_choice")) {
    const json& tc = b.at("tool_choice");
    if (tc.is_string() && (tc == "none" || tc == "auto" || tc == "required")) {
      call.tool_choice = tc.get<std::string>();
    } else if (tc.is_object() && tc.value("type", "") == "function" && tc.contains("name") &&
               tc.at("name").is_string()) {
      call.tool_choice = "required";
      call.forced_name = tc.at("name").get<std::string>();
    } else {
      throw ApiError(400, "'tool_choice' must be none, auto, required or {type: function, name}", "tool_choice");
    }
  }
  call.parallel = get_bool(b, "parallel_tool_calls", true);
  if (has_field(b, "chat_template_kwargs")) {
    // llama-server's extension (e.g. {"enable_thinking": false})
    if (!b.at("chat_template_kwargs").is_object()) {
      throw ApiError(400, "'chat_template_kwargs' must be an object", "chat_template_kwargs");
    }
    call.template_kwargs = b.at("chat_template_kwargs");
  }
  return call;
}

// text.format: text, json_object or json_schema {name, schema, strict, description}.
std::string text_format_grammar(const json& b) {
  if (!has_field(b, "text")) return "";
  const json& t = b.at("text");
  if (!t.is_object()) throw ApiError(400, "'text' must be an object", "text");
  check_fields(t, {"format"}, {}, "text.");
  if (!has_field(t, "format")) return "";
  const json& f = t.at("format");
  if (!f.is_object()) throw ApiError(400, "'text.format' must be an object", "text.format");
  const std::string type = f.value("type", "");
  if (type == "json_schema") {
    check_fields(f, {"type", "name", "schema", "strict", "description"}, {}, "text.format.");
    if (!f.contains("schema")) throw ApiError(400, "'text.format.schema' is required", "text.format.schema");
    return schema_grammar(f.at("schema"), "text.format.schema");
  }
  return response_format_grammar(f, "text.format");
}

json usage_json(const GenEvent& e) {
  return {{"input_tokens", e.n_prompt},
          {"input_tokens_details", {{"cached_tokens", e.n_cached}}},
          {"output_tokens", e.n_gen},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", e.n_prompt + e.n_gen}};
}

json message_item(const std::string& id, const std::string& text, const char* status) {
  json content = json::array();
  if (std::string(status) == "completed") {
    content.push_back({{"type", "output_text"}, {"text", text}, {"annotations", json::array()}});
  }
  return {{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json call_item(const std::string& id, const std::string& call_id, const std::string& name, const std::string& args,
               const char* status) {
  return {{"id", id},     {"type", "function_call"}, {"status", status}, {"call_id", call_id},
          {"name", name}, {"arguments", args}};
}

json reasoning_item(const std::string& id, const std::string& text) {
  json content = json::array();
  if (!text.empty()) content.push_back({{"type", "reasoning_text"}, {"text", text}});
  return {{"id", id}, {"type", "reasoning"}, {"summary", json::array()}, {"content", content}};
}

}  // namespace

HttpReply Routes::responses(const std::string& text) {
  const json b = parse_body(text);
  if (has_field(b, "previous_response_id")) {
    throw ApiError(400, "'previous_response_id' is not implemented: strix serve keeps no state between responses",
                   "previous_response_id");
  }
  if (get_bool(b, "store", false)) {
    throw ApiError(400, "'store': true is not implemented: strix serve keeps no state between responses", "store");
  }
  if (get_bool(b, "background", false)) {
    throw ApiError(400, "'background': true is not implemented", "background");
  }
  if (has_field(b, "reasoning")) {
    // llama-server passes the Responses body on as a chat request, where
    // `reasoning` means nothing (it is dropped); Strix refuses what it does not honour.
    throw ApiError(400,
                   "'reasoning' (effort / summary) is not implemented; llama-server's reasoning_budget_tokens, "
                   "thinking_budget_tokens and chat_template_kwargs.enable_thinking are",
                   "reasoning");
  }
  check_fields(b,
               {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "max_output_tokens",
                "temperature", "top_p", "stream", "store", "background", "metadata", "user", "text", "truncation",
                "chat_template_kwargs"},
               kReasoningFields);
  if (has_field(b, "truncation") && get_string(b, "truncation", "") != "disabled") {
    throw ApiError(400, "'truncation' other than \"disabled\" is not implemented", "truncation");
  }
  if (has_field(b, "metadata") && !b.at("metadata").is_object()) {
    throw ApiError(400, "'metadata' must be an object", "metadata");
  }
  // The reasoning budget as on /v1/chat/completions (llama-server turns a
  // Responses request into a chat one): the server's --reasoning-budget, the
  // request's reasoning_budget_tokens / thinking_budget_tokens / message.
  const ThinkBudget think = reasoning_budget(b, {cfg_.reasoning_budget, cfg_.reasoning_budget_message});
  ChatCall call = responses_chat_call(b);
  order_tool_schemas(call, text, {"parameters"});
  apply_thinking_switch(call, think, chat_);
  const ChatPlan plan = plan_chat(chat_, call);
  json sb = json::object();
  for (const char* k : {"temperature", "top_p"}) {
    if (has_field(b, k)) sb[k] = b.at(k);
  }
  sampling::Params params = sampling_params(sb);
  params.grammar = text_format_grammar(b);
  if (!plan.grammar.empty()) {
    if (!params.grammar.empty()) throw ApiError(400, "'text.format' together with tools is not implemented", "text");
    params.grammar = plan.grammar;
    params.grammar_lazy = plan.grammar_lazy;
    params.grammar_trigger_patterns = plan.grammar_triggers;
  }
  apply_think_budget(params, chat_, plan, think);
  const int64_t max_out = get_int(b, "max_output_tokens", -1);
  if (max_out == 0 || max_out < -1) throw ApiError(400, "'max_output_tokens' must be at least 1", "max_output_tokens");
  GenRequest g = make_request(tk_, plan.prompt, json::object(), {cfg_.n_ctx, max_out}, params, {});
  HttpReply r;
  r.streams.push_back(engine_.submit(std::move(g)));

  // The response object as it is echoed in every state.
  json base = {{"id", random_id("resp_")},
               {"object", "response"},
               {"created_at", static_cast<int64_t>(std::time(nullptr))},
               {"status", "in_progress"},
               {"error", nullptr},
               {"incomplete_details", nullptr},
               {"instructions", b.value("instructions", json())},
               {"max_output_tokens", max_out > 0 ? json(max_out) : json(nullptr)},
               {"model", cfg_.alias},
               {"output", json::array()},
               {"parallel_tool_calls", get_bool(b, "parallel_tool_calls", true)},
               {"previous_response_id", nullptr},
               {"store", false},
               {"temperature", b.value("temperature", json(params.temp))},
               {"top_p", b.value("top_p", json(params.top_p))},
               {"tool_choice", b.value("tool_choice", json("auto"))},
               {"tools", b.value("tools", json::array())},
               {"text", b.value("text", json{{"format", {{"type", "text"}}}})},
               {"truncation", "disabled"},
               {"metadata", b.value("metadata", json::object())},
               {"usage", nullptr}};
  const auto finish = [](json resp, const GenEvent& e, json output) {
    resp["output"] = std::move(output);
    resp["usage"] = usage_json(e);
    if (e.finish == Finish::kLimit) {
      resp["status"] = "incomplete";
      resp["incomplete_details"] = {{"reason", "max_output_tokens"}};
    } else {
      resp["status"] = "completed";
    }
    return resp;
  };
  if (!get_bool(b, "stream", false)) {
    r.on_done = [base, plan, finish](std::vector<GenResult>& res) {
      const GenEvent& e = res[0].last;
      if (e.finish == Finish::kError) return json_reply(error_event_body(e), 500);
      const chat::ParsedMessage pm = parse_output(plan, res[0].text);
      json output = json::array();
      if (!pm.reasoning_content.empty()) output.push_back(reasoning_item(random_id("rs_"), pm.reasoning_content));
      if (!pm.content.empty() || pm.tool_calls.empty()) {
        output.push_back(message_item(random_id("msg_"), pm.content, "completed"));
      }
      for (const chat::ToolCall& c : pm.tool_calls) {
        output.push_back(call_item(random_id("fc_"), c.id, c.name, c.arguments, "completed"));
      }
      return json_reply(finish(base, e, output));
    };
    return r;
  }
  r.sse = true;
  struct State {
    ChatStream parser;
    Blocks blocks;
    int64_t seq = 0;
    json output = json::array();
    std::vector<std::string> ids;  // item id of each block
    std::vector<json> items;       // the open item of each block
    explicit State(const ChatPlan& p) : parser(p) {}
  };
  auto st = std::make_shared<State>(plan);
  const auto ev = [st](const char* type, json j) {
    j["type"] = type;
    j["sequence_number"] = st->seq++;
    return sse_event(type, j);
  };
  r.sse_head = ev("response.created", {{"response", base}});  // sequence numbers in order: two statements
  r.sse_head += ev("response.in_progress", {{"response", base}});
  r.on_event = [st, ev, base, finish](size_t, const GenEvent& e) -> std::string {
    if (e.done && e.finish == Finish::kError) {
      return ev("error", {{"code", "server_error"}, {"message", e.error}, {"param", nullptr}});
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
      for (auto& x : st->blocks.close()) evs.push_back(std::move(x));
    }
    std::string out;
    using K = BlockEvent::Kind;
    using T = BlockEvent::Type;
    for (const BlockEvent& x : evs) {
      const int oi = x.index;
      if (x.kind == K::kOpen) {
        json item;
        if (x.type == T::kText) item = message_item(random_id("msg_"), "", "in_progress");
        if (x.type == T::kTool) item = call_item(random_id("fc_"), x.id, x.name, "", "in_progress");
        if (x.type == T::kReasoning) item = reasoning_item(random_id("rs_"), "");
        st->ids.push_back(item["id"]);
        st->items.push_back(item);
        out += ev("response.output_item.added", {{"output_index", oi}, {"item", item}});
        if (x.type == T::kText) {
          out += ev("response.content_part.added",
                    {{"item_id", st->ids[oi]},
                     {"output_index", oi},
                     {"content_index", 0},
                     {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
        }
      } else if (x.kind == K::kDelta) {
        const json where = {{"item_id", st->ids[oi]}, {"output_index", oi}};
        json d = where;
        d["delta"] = x.text;
        if (x.type == T::kText) {
          d["content_index"] = 0;
          d["logprobs"] = json::array();
          out += ev("response.output_text.delta", d);
        } else if (x.type == T::kTool) {
          out += ev("response.function_call_arguments.delta", d);
        } else {
          d["content_index"] = 0;
          out += ev("response.reasoning_text.delta", d);
        }
      } else {
        json item = st->items[oi];
        json d = {{"item_id", st->ids[oi]}, {"output_index", oi}};
        if (x.type == T::kText) {
          const json part = {{"type", "output_text"}, {"text", x.text}, {"annotations", json::array()}};
          d["content_index"] = 0;
          json t = d;
          t["text"] = x.text;
          t["logprobs"] = json::array();
          out += ev("response.output_text.done", t);
          json p = d;
          p["part"] = part;
          out += ev("response.content_part.done", p);
          item = message_item(st->ids[oi], x.text, "completed");
        } else if (x.type == T::kTool) {
          d["arguments"] = x.text;
          d["name"] = item["name"];
          out += ev("response.function_call_arguments.done", d);
          item["arguments"] = x.text;
          item["status"] = "completed";
        } else {
          d["content_index"] = 0;
          d["text"] = x.text;
          out += ev("response.reasoning_text.done", d);
          item = reasoning_item(st->ids[oi], x.text);
        }
        st->output.push_back(item);
        out += ev("response.output_item.done", {{"output_index", oi}, {"item", item}});
      }
    }
    if (e.done) {
      const json resp = finish(base, e, st->output);
      out += ev(resp["status"] == "completed" ? "response.completed" : "response.incomplete", {{"response", resp}});
    }
    return out;
  };
  return r;
}

}  // namespace strix::server
