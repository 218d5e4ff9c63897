// llama-server's own endpoints: /tokenize, /detokenize, /apply-template and /completion.
#include <climits>
#include <memory>
#include <utility>

#include "server/api_common.h"
#include "server/api_error.h"
#include "server/oai_chat.h"
#include "server/reasoning.h"
#include "server/request_fields.h"
#include "server/routes.h"

namespace strix::server {

HttpReply Routes::tokenize(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"content", "add_special", "parse_special", "with_pieces"});
  if (!has_field(b, "content")) throw ApiError(400, "'content' is required", "content");
  const std::string content = get_string(b, "content", "");
  const auto ids = tk_.tokenize(content, get_bool(b, "add_special", false), get_bool(b, "parse_special", true));
  json tokens = json::array();
  if (get_bool(b, "with_pieces", false)) {
    for (int32_t id : ids) tokens.push_back({{"id", id}, {"piece", tk_.token_to_piece(id, true)}});
  } else {
    tokens = ids;
  }
  return json_reply({{"tokens", tokens}});
}

namespace {

std::vector<int32_t> token_ids(const json& t, const tok::Tokenizer& tk, const char* field) {
  if (!t.is_array()) throw ApiError(400, std::string("'") + field + "' must be an array of token ids", field);
  std::vector<int32_t> ids;
  for (const json& id : t) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tk.vocab().n_tokens()) {
      throw ApiError(400, std::string("'") + field + "' holds " + id.dump() + ", not a token id of this vocabulary",
                     field);
    }
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

// llama-server's reasoning budget on a raw prompt: reasoning_budget_tokens >= 0
// counts the tokens between reasoning_budget_start_tag and _end_tag and then
// forces reasoning_budget_message + the end tag (all tokenized with special
// tokens parsed). Without tags there is no block to count, so a budget asks for them.
void raw_reasoning_budget(const json& b, const tok::Tokenizer& tk, sampling::Params& p) {
  const int64_t budget = get_int(b, "reasoning_budget_tokens", -1);
  if (budget < -1 || budget > INT32_MAX) {
    throw ApiError(400, "'reasoning_budget_tokens' must be -1 (unlimited) or a token count", "reasoning_budget_tokens");
  }
  const std::string start = get_string(b, "reasoning_budget_start_tag", "");
  const std::string end = get_string(b, "reasoning_budget_end_tag", "");
  const std::string message = get_string(b, "reasoning_budget_message", "");
  if (budget < 0) return;
  if (start.empty() || end.empty()) {
    throw ApiError(400, "'reasoning_budget_tokens' needs 'reasoning_budget_start_tag' and 'reasoning_budget_end_tag'",
                   start.empty() ? "reasoning_budget_start_tag" : "reasoning_budget_end_tag");
  }
  p.reasoning_budget_tokens = static_cast<int32_t>(budget);
  p.reasoning_budget_start = tk.tokenize(start, false, true);
  p.reasoning_budget_end = {tk.tokenize(end, false, true)};
  p.reasoning_budget_forced = tk.tokenize(message + end, false, true);
}

}  // namespace

HttpReply Routes::detokenize(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"tokens"});
  std::string out;
  if (has_field(b, "tokens")) {
    // llama-server's tokens_to_str: the pieces joined, special tokens rendered
    for (int32_t id : token_ids(b.at("tokens"), tk_, "tokens")) out += tk_.token_to_piece(id, true);
  }
  return json_reply({{"content", out}});
}

HttpReply Routes::apply_template(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"messages", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs"},
               kReasoningFields);
  // rendered as a chat request would be: a reasoning budget of 0 turns enable_thinking off
  ChatCall call = openai_chat_call(b);
  order_tool_schemas(call, text, {"function", "parameters"});
  apply_thinking_switch(call, reasoning_budget(b, {cfg_.reasoning_budget, cfg_.reasoning_budget_message}), chat_);
  return json_reply({{"prompt", plan_chat(chat_, call).prompt}});
}

HttpReply Routes::completion_native(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b,
               {"prompt", "n_predict", "stop", "stream", "response_format", "reasoning_budget_tokens",
                "reasoning_budget_start_tag", "reasoning_budget_end_tag", "reasoning_budget_message"},
               kSamplingFields);
  if (!has_field(b, "prompt")) throw ApiError(400, "'prompt' is required", "prompt");
  const json& pj = b.at("prompt");
  const bool stream = get_bool(b, "stream", false);
  const PromptLimits lim{cfg_.n_ctx, get_int(b, "n_predict", -1)};
  sampling::Params params = sampling_params(b);
  raw_reasoning_budget(b, tk_, params);
  GenRequest g;
  if (pj.is_string()) {
    g = make_request(tk_, pj.get<std::string>(), b, lim, params, get_strings(b, "stop"));
  } else if (pj.is_array() && !pj.empty() && pj[0].is_number()) {
    g = make_request_ids(tk_, token_ids(pj, tk_, "prompt"), b, lim, params, get_strings(b, "stop"));
  } else {
    throw ApiError(400, "'prompt' must be a string or an array of token ids (several prompts are not implemented)",
                   "prompt");
  }
  const int n_probs = g.n_probs;
  HttpReply r;
  r.streams.push_back(engine_.submit(std::move(g)));
  const std::string model = cfg_.alias;
  const auto final_fields = [model](const GenEvent& e) {
    return json{{"stop", true},
                {"model", model},
                {"tokens_predicted", e.n_gen},
                {"tokens_evaluated", e.n_prompt},
                {"tokens_cached", e.n_cached},
                {"stop_type", stop_type(e.finish)},
                {"stopping_word", e.stop_word},
                {"truncated", e.truncated}};
  };
  if (stream) {
    r.sse = true;
    r.on_event = [final_fields, n_probs](size_t, const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) return sse_data(error_event_body(e));
      std::string out;
      if (!e.text.empty() || !e.probs.empty()) {
        json c = {{"content", e.text}, {"stop", false}};
        if (n_probs > 0) c["completion_probabilities"] = native_probs(e.probs, n_probs);
        out += sse_data(c);
      }
      if (e.done) {
        json f = final_fields(e);
        f["content"] = "";
        out += sse_data(f);
      }
      return out;
    };
  } else {
    r.on_done = [final_fields, n_probs](std::vector<GenResult>& res) {
      const GenEvent& e = res[0].last;
      if (e.finish == Finish::kError) return json_reply(error_event_body(e), 500);
      json f = final_fields(e);
      f["content"] = res[0].text;
      if (n_probs > 0) f["completion_probabilities"] = native_probs(res[0].probs, n_probs);
      return json_reply(f);
    };
  }
  return r;
}

}  // namespace strix::server
