// POST /v1/chat/completions: OpenAI chat with n, logprobs / top_logprobs,
// response_format (json_object / json_schema enforced by a grammar), tools
// (tool_choice none / auto / required / a named function; calls parsed from
// the model's own format and streamed as delta.tool_calls), reasoning_content
// for thinking models, and the llama-server sampling extras.
#include "server/oai_chat.h"

#include <algorithm>
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

// Text parts joined by a line break, as llama.cpp hands them to a template
// that takes string content (common_chat_msg::to_json_oaicompat, concat_typed_text).
std::string text_content(const json& c, const std::string& where) {
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw ApiError(400, where + " must be a string or an array of text parts", where);
  std::string out;
  for (size_t j = 0; j < c.size(); ++j) {
    const std::string part = where + "[" + std::to_string(j) + "]";
    if (!c[j].is_object() || c[j].value("type", "") != "text" || !c[j].contains("text") ||
        !c[j].at("text").is_string()) {
      throw ApiError(400, part + ": only {\"type\": \"text\", \"text\": ...} parts are implemented", part + ".type");
    }
    if (!out.empty()) out += '\n';
    out += c[j].at("text").get<std::string>();
  }
  return out;
}

json tool_calls_of(const json& tcs, const std::string& where) {
  if (!tcs.is_array()) throw ApiError(400, where + " must be an array", where);
  json out = json::array();
  for (size_t k = 0; k < tcs.size(); ++k) {
    const std::string w = where + "[" + std::to_string(k) + "]";
    const json& tc = tcs[k];
    if (!tc.is_object() || !tc.contains("function") || !tc.at("function").is_object() ||
        !tc.at("function").contains("name") || !tc.at("function").at("name").is_string()) {
      throw ApiError(400, w + " must be {id, type: \"function\", function: {name, arguments}}", w);
    }
    check_fields(tc, {"id", "type", "function", "index"}, {}, w + ".");
    const json& fn = tc.at("function");
    check_fields(fn, {"name", "arguments"}, {}, w + ".function.");
    std::string args = "{}";
    if (fn.contains("arguments") && fn.at("arguments").is_string()) {
      args = fn.at("arguments").get<std::string>();
    } else if (fn.contains("arguments") && fn.at("arguments").is_object()) {
      args = fn.at("arguments").dump();
    }
    out.push_back({{"id", tc.value("id", "call_" + std::to_string(k))},
                   {"type", "function"},
                   {"function", {{"name", fn.at("name")}, {"arguments", args}}}});
  }
  return out;
}

}  // namespace

ChatCall openai_chat_call(const json& b) {
  ChatCall call;
  if (!has_field(b, "messages") || !b.at("messages").is_array() || b.at("messages").empty()) {
    throw ApiError(400, "'messages' must be a non-empty array", "messages");
  }
  const json& msgs = b.at("messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = msgs[i];
    if (!m.is_object()) throw ApiError(400, where + " must be an object", where);
    check_fields(m, {"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"}, {}, where + ".");
    if (!m.contains("role") || !m.at("role").is_string()) {
      throw ApiError(400, where + ".role must be a string", where + ".role");
    }
    std::string role = m.at("role").get<std::string>();
    if (role == "developer") role = "system";  // templates know "system"
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      throw ApiError(400, where + ".role must be system, developer, user, assistant or tool", where + ".role");
    }
    json out = {{"role", role}, {"content", text_content(m.value("content", json()), where + ".content")}};
    if (has_field(m, "tool_calls")) {
      if (role != "assistant") throw ApiError(400, where + ": only assistant messages carry tool_calls", where);
      out["tool_calls"] = tool_calls_of(m.at("tool_calls"), where + ".tool_calls");
    }
    if (role == "tool") {
      out["tool_call_id"] = get_string(m, "tool_call_id", "");
    } else if (has_field(m, "tool_call_id")) {
      throw ApiError(400, where + ": only tool messages carry tool_call_id", where + ".tool_call_id");
    }
    if (has_field(m, "name")) out["name"] = get_string(m, "name", "");
    if (has_field(m, "reasoning_content")) out["reasoning_content"] = get_string(m, "reasoning_content", "");
    call.messages.push_back(out);
  }
  if (has_field(b, "tools")) call.tools = b.at("tools");
  if (has_field(b, "tool_choice")) {
    const json& tc = b.at("tool_choice");
    if (tc.is_string()) {
      call.tool_choice = tc.get<std::string>();
      if (call.tool_choice != "none" && call.tool_choice != "auto" && call.tool_choice != "required") {
        throw ApiError(400, "'tool_choice' must be none, auto, required or {type: function, function: {name}}",
                       "tool_choice");
      }
    } else if (tc.is_object() && tc.value("type", "") == "function" && tc.contains("function") &&
               tc.at("function").is_object() && tc.at("function").contains("name") &&
               tc.at("function").at("name").is_string()) {
      call.tool_choice = "required";
      call.forced_name = tc.at("function").at("name").get<std::string>();
    } else {
      throw ApiError(400, "'tool_choice' must be none, auto, required or {type: function, function: {name}}",
                     "tool_choice");
    }
  }
  call.parallel = get_bool(b, "parallel_tool_calls", true);
  if (has_field(b, "chat_template_kwargs")) {
    if (!b.at("chat_template_kwargs").is_object()) {
      throw ApiError(400, "'chat_template_kwargs' must be an object", "chat_template_kwargs");
    }
    call.template_kwargs = b.at("chat_template_kwargs");
  }
  return call;
}

namespace {

bool include_usage(const json& b) {
  if (!has_field(b, "stream_options")) return false;
  const json& so = b.at("stream_options");
  if (!so.is_object()) throw ApiError(400, "'stream_options' must be an object", "stream_options");
  check_fields(so, {"include_usage"}, {}, "stream_options.");
  return get_bool(so, "include_usage", false);
}

json tool_calls_json(const std::vector<chat::ToolCall>& calls) {
  json out = json::array();
  for (const chat::ToolCall& c : calls) {
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

}  // namespace

HttpReply Routes::chat_oai(const std::string& text) {
  const json b = parse_body(text);
  check_fields(
      b,
      {"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "stop", "n", "user",
       "logprobs", "top_logprobs", "response_format", "tools", "tool_choice", "parallel_tool_calls",
       "chat_template_kwargs", "reasoning_budget_tokens", "thinking_budget_tokens", "reasoning_budget_message"},
      kSamplingFields);
  const int64_t n = get_int(b, "n", 1);
  if (n < 1 || n > 64) throw ApiError(400, "'n' must be in [1, 64]", "n");
  const bool logprobs = get_bool(b, "logprobs", false);
  const int64_t top = get_int(b, "top_logprobs", 0);
  if (top < 0 || top > 20) throw ApiError(400, "'top_logprobs' must be in [0, 20]", "top_logprobs");
  if (has_field(b, "top_logprobs") && !logprobs) {
    throw ApiError(400, "'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  // llama-server's n_probs alone also asks for logprobs (with that many alternatives)
  const int64_t n_probs = get_int(b, "n_probs", 0);
  const int top_n =
      logprobs ? static_cast<int>(top) : (n_probs > 0 ? static_cast<int>(std::min<int64_t>(n_probs, 20)) : -1);
  const ThinkBudget think = reasoning_budget(b, {cfg_.reasoning_budget, cfg_.reasoning_budget_message});
  ChatCall call = openai_chat_call(b);
  order_tool_schemas(call, text, {"function", "parameters"});
  apply_thinking_switch(call, think, chat_);
  const ChatPlan plan = plan_chat(chat_, call);
  const bool stream = get_bool(b, "stream", false);
  const bool usage = include_usage(b);
  sampling::Params params = sampling_params(b);
  apply_think_budget(params, chat_, plan, think);
  if (!plan.grammar.empty()) {
    if (!params.grammar.empty()) {
      throw ApiError(400, "'response_format' (or a grammar) together with tools is not implemented",
                     has_field(b, "response_format") ? "response_format" : "grammar");
    }
    params.grammar = plan.grammar;
    params.grammar_lazy = plan.grammar_lazy;
    params.grammar_trigger_patterns = plan.grammar_triggers;
  }
  const PromptLimits lim{cfg_.n_ctx, get_int(b, "max_completion_tokens", get_int(b, "max_tokens", -1))};
  GenRequest first = make_request(tk_, plan.prompt, b, lim, params, get_strings(b, "stop"));
  if (top_n >= 0) first.n_probs = std::max<int32_t>({first.n_probs, 1, top_n});
  const int32_t n_prompt = static_cast<int32_t>(first.prompt.size());
  HttpReply r;
  std::vector<GenRequest> more;
  for (int64_t i = 1; i < n; ++i) {
    sampling::Params pi = params;
    if (pi.seed != 0xFFFFFFFFu) pi.seed = params.seed + static_cast<uint32_t>(i);
    more.push_back(clone_request(first, tk_, pi, cfg_.n_ctx));
  }
  more.insert(more.begin(), std::move(first));
  r.streams = engine_.submit_all(std::move(more));

  const json head = {{"id", random_id("chatcmpl-")},
                     {"object", stream ? "chat.completion.chunk" : "chat.completion"},
                     {"created", static_cast<int64_t>(std::time(nullptr))},
                     {"model", cfg_.alias},
                     {"system_fingerprint", "strix"}};
  if (stream) {
    r.sse = true;
    struct State {
      std::vector<std::unique_ptr<ChatStream>> parsers;
      std::vector<bool> started;
      std::vector<GenEvent> last;
      bool failed = false;
    };
    auto st = std::make_shared<State>();
    for (int64_t i = 0; i < n; ++i) st->parsers.push_back(std::make_unique<ChatStream>(plan));
    st->started.assign(n, false);
    st->last.resize(n);
    r.on_event = [head, st, top_n](size_t i, const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) {
        st->failed = true;
        return sse_data(error_event_body(e));
      }
      std::string out;
      bool probs_sent = e.probs.empty();
      const auto chunk = [&](const json& delta, const json& finish) {
        json c = head;
        json lp = nullptr;
        if (top_n >= 0 && !probs_sent) {
          lp = chat_logprobs(e.probs, top_n);
          probs_sent = true;
        }
        c["choices"] = json::array({{{"index", i}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish}}});
        out += sse_data(c);
      };
      if (!st->started[i]) {
        // OpenAI opens with the role and an empty content
        st->started[i] = true;
        chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
      }
      ChatStream& ps = *st->parsers[i];
      std::vector<chat::StreamDelta> deltas = ps.feed(e.text);
      if (e.done) {
        for (auto& d : ps.finish()) deltas.push_back(std::move(d));
      }
      for (const chat::StreamDelta& d : deltas) {
        if (!d.reasoning_content.empty()) chunk({{"reasoning_content", d.reasoning_content}}, nullptr);
        if (!d.content.empty()) chunk({{"content", d.content}}, nullptr);
        if (d.tool_index >= 0) {
          json call = {{"index", d.tool_index}, {"function", {{"arguments", d.arguments}}}};
          if (!d.tool_id.empty()) call["id"] = d.tool_id;
          if (!d.tool_name.empty()) {
            call["type"] = "function";
            call["function"]["name"] = d.tool_name;
          }
          chunk({{"tool_calls", json::array({call})}}, nullptr);
        }
      }
      if (!probs_sent) chunk(json::object(), nullptr);
      if (e.done) {
        chunk(json::object(), oai_finish(e.finish, ps.saw_tool_call()));
        st->last[i] = e;
      }
      return out;
    };
    r.on_end = [head, st, usage, n_prompt]() { return oai_stream_end(head, st->last, st->failed, usage, n_prompt); };
  } else {
    r.on_done = [head, plan, top_n, n_prompt](std::vector<GenResult>& res) {
      json choices = json::array();
      int64_t gen = 0, cached = 0;
      for (size_t i = 0; i < res.size(); ++i) {
        const GenResult& g = res[i];
        if (g.last.finish == Finish::kError) return json_reply(error_event_body(g.last), 500);
        const chat::ParsedMessage pm = parse_output(plan, g.text);
        json msg = {{"role", "assistant"}};
        msg["content"] = pm.content.empty() && !pm.tool_calls.empty() ? json(nullptr) : json(pm.content);
        if (!pm.reasoning_content.empty()) msg["reasoning_content"] = pm.reasoning_content;
        if (!pm.tool_calls.empty()) msg["tool_calls"] = tool_calls_json(pm.tool_calls);
        json lp = nullptr;
        if (top_n >= 0) lp = chat_logprobs(g.probs, top_n);
        choices.push_back({{"index", i},
                           {"message", msg},
                           {"logprobs", lp},
                           {"finish_reason", oai_finish(g.last.finish, !pm.tool_calls.empty())}});
        gen += g.last.n_gen;
        cached = std::max<int64_t>(cached, g.last.n_cached);
      }
      json c = head;
      c["choices"] = choices;
      c["usage"] = oai_usage(n_prompt, gen, cached);
      return json_reply(c);
    };
  }
  return r;
}

}  // namespace strix::server
