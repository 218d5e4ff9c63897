#include "server/routes.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <utility>

#include "chat/chat_template.h"
#include "chat/jinja_value.h"
#include "core/error.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace strix::server {

using json = nlohmann::json;

namespace {

HttpReply json_reply(const json& j, int status = 200) {
  HttpReply r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

std::string random_id(const char* prefix) {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kChars[rng() % (sizeof(kChars) - 1)];
  return id;
}

const char* oai_finish(Finish f) { return f == Finish::kLimit ? "length" : "stop"; }

const char* stop_type(Finish f) {
  switch (f) {
    case Finish::kEos:
      return "eos";
    case Finish::kLimit:
      return "limit";
    case Finish::kWord:
      return "word";
    default:
      return "none";
  }
}

json usage_json(const GenEvent& e) {
  return {{"prompt_tokens", e.n_prompt}, {"completion_tokens", e.n_gen}, {"total_tokens", e.n_prompt + e.n_gen}};
}

ApiError generation_error(const GenEvent& e) { return ApiError(500, e.error, {}, "server_error"); }

// The sampling fields common to the endpoints, llama.cpp's defaults where absent.
sampling::Params sampling_params(const json& b) {
  sampling::Params p;
  p.temp = static_cast<float>(get_number(b, "temperature", p.temp));
  p.top_p = static_cast<float>(get_number(b, "top_p", p.top_p));
  p.top_k = static_cast<int32_t>(get_int(b, "top_k", p.top_k));
  p.min_p = static_cast<float>(get_number(b, "min_p", p.min_p));
  p.penalty_present = static_cast<float>(get_number(b, "presence_penalty", p.penalty_present));
  p.penalty_freq = static_cast<float>(get_number(b, "frequency_penalty", p.penalty_freq));
  p.penalty_repeat = static_cast<float>(get_number(b, "repeat_penalty", p.penalty_repeat));
  const int64_t seed = get_int(b, "seed", -1);
  if (seed != -1) p.seed = static_cast<uint32_t>(seed);
  return p;
}

// OpenAI's n / logprobs / echo: accepted only at the values Strix produces.
void check_single_choice(const json& b) {
  if (get_int(b, "n", 1) != 1) throw ApiError(400, "'n' other than 1 is not implemented by strix serve", "n");
}

bool include_usage(const json& b) {
  if (!has_field(b, "stream_options")) return false;
  const json& so = b.at("stream_options");
  if (!so.is_object()) throw ApiError(400, "'stream_options' must be an object", "stream_options");
  check_fields(so, {"include_usage"});
  return get_bool(so, "include_usage", false);
}

}  // namespace

Routes::Routes(Engine& engine, const tok::Tokenizer& tk, const Model& model, RouteConfig cfg)
    : engine_(engine), tk_(tk), model_(model), cfg_(std::move(cfg)), created_(std::time(nullptr)) {}

HttpReply Routes::handle(const HttpRequest& req) {
  try {
    return route(req);
  } catch (const ApiError& e) {
    return json_reply(e.body(), e.status());
  } catch (const Refusal& e) {
    return json_reply(ApiError(400, e.what()).body(), 400);
  } catch (const std::exception& e) {
    return json_reply(ApiError(500, e.what(), {}, "server_error").body(), 500);
  }
}

HttpReply Routes::route(const HttpRequest& req) {
  const std::string& p = req.path;
  const bool get = req.method == "GET", post = req.method == "POST";
  if (p == "/health" || p == "/v1/health") {
    if (!get) throw ApiError(405, "use GET for " + p, {}, "invalid_request_error");
    const Engine::Stats st = engine_.stats();
    return json_reply({{"status", "ok"},
                       {"slots_idle", engine_.n_parallel() - st.processing},
                       {"slots_processing", st.processing},
                       {"requests_queued", st.queued},
                       {"requests_cancelled", st.cancelled}});
  }
  if (!cfg_.api_key.empty() && req.authorization != "Bearer " + cfg_.api_key) {
    throw ApiError(401, "Invalid API key", {}, "invalid_request_error", "invalid_api_key");
  }
  struct Route {
    const char* path;
    bool post;
    HttpReply (Routes::*fn)(const std::string&);
  };
  static const Route kRoutes[] = {
      {"/tokenize", true, &Routes::tokenize},
      {"/detokenize", true, &Routes::detokenize},
      {"/apply-template", true, &Routes::apply_template},
      {"/completion", true, &Routes::completion_native},
      {"/completions", true, &Routes::completion_native},
      {"/v1/completions", true, &Routes::completion_oai},
      {"/v1/chat/completions", true, &Routes::chat_oai},
      {"/chat/completions", true, &Routes::chat_oai},
  };
  if (p == "/v1/models" || p == "/models") {
    if (!get) throw ApiError(405, "use GET for " + p);
    return models();
  }
  for (const Route& r : kRoutes) {
    if (p != r.path) continue;
    if (!post) throw ApiError(405, "use POST for " + p);
    return (this->*r.fn)(req.body);
  }
  throw ApiError(404, "no route " + req.method + " " + p, {}, "not_found_error");
}

HttpReply Routes::models() const {
  const Hparams& hp = model_.hparams();
  json m = {
      {"id", cfg_.alias},
      {"object", "model"},
      {"created", created_},
      {"owned_by", "strix"},
      {"meta",
       {{"n_vocab", hp.n_vocab}, {"n_ctx", cfg_.n_ctx}, {"n_params", model_.n_params()}, {"size", model_.n_bytes()}}}};
  return json_reply({{"object", "list"}, {"data", json::array({m})}});
}

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

HttpReply Routes::detokenize(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"tokens"});
  std::string out;
  if (has_field(b, "tokens")) {
    const json& t = b.at("tokens");
    if (!t.is_array()) throw ApiError(400, "'tokens' must be an array of token ids", "tokens");
    for (const json& id : t) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= tk_.vocab().n_tokens()) {
        throw ApiError(400, "'tokens' holds " + id.dump() + ", not a token id of this vocabulary", "tokens");
      }
      // llama-server's tokens_to_str: the pieces joined, special tokens rendered
      out += tk_.token_to_piece(static_cast<int32_t>(id.get<int64_t>()), true);
    }
  }
  return json_reply({{"content", out}});
}

namespace {

// Messages as the template sees them: role and string content (text parts joined).
std::string render_chat(const json& b, const std::string& tmpl, const tok::Tokenizer& tk) {
  if (tmpl.empty()) {
    throw ApiError(400,
                   "this model has no chat template (tokenizer.chat_template); start the server with "
                   "--chat-template");
  }
  if (!has_field(b, "messages") || !b.at("messages").is_array() || b.at("messages").empty()) {
    throw ApiError(400, "'messages' must be a non-empty array", "messages");
  }
  json list = json::array();
  const json& msgs = b.at("messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json& m = msgs[i];
    if (!m.is_object()) throw ApiError(400, where + " must be an object", where);
    for (const auto& [key, value] : m.items()) {
      if (key != "role" && key != "content") {
        throw ApiError(400, "Unsupported field '" + where + "." + key + "': strix serve does not implement it",
                       where + "." + key);
      }
    }
    if (!m.contains("role") || !m.at("role").is_string()) {
      throw ApiError(400, where + ".role must be a string", where + ".role");
    }
    std::string content;
    if (m.contains("content") && !m.at("content").is_null()) {
      const json& c = m.at("content");
      if (c.is_string()) {
        content = c.get<std::string>();
      } else if (c.is_array()) {
        for (size_t j = 0; j < c.size(); ++j) {
          const std::string part = where + ".content[" + std::to_string(j) + "]";
          if (!c[j].is_object() || c[j].value("type", "") != "text" || !c[j].contains("text") ||
              !c[j].at("text").is_string()) {
            throw ApiError(400, part + ": only {\"type\": \"text\", \"text\": ...} parts are implemented",
                           part + ".type");
          }
          content += c[j].at("text").get<std::string>();
        }
      } else {
        throw ApiError(400, where + ".content must be a string or an array of text parts", where + ".content");
      }
    }
    list.push_back({{"role", m.at("role")}, {"content", content}});
  }
  chat::ChatInputs in;
  in.messages = jinja::parse_json(list.dump());
  in.add_generation_prompt = true;
  const auto& v = tk.vocab();
  if (v.bos != tok::kNoToken) in.bos_token = tk.token_to_piece(v.bos, true);
  if (v.eos != tok::kNoToken) in.eos_token = tk.token_to_piece(v.eos, true);
  try {
    return chat::apply_chat_template(tmpl, in);
  } catch (const std::exception& e) {
    throw ApiError(400, std::string("the chat template failed: ") + e.what(), "messages");
  }
}

}  // namespace

HttpReply Routes::apply_template(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"messages"});
  return json_reply({{"prompt", render_chat(b, cfg_.chat_template, tk_)}});
}

// Tokenizes a prompt and builds the request (the Sampler is built here so that
// bad sampling parameters are a 400 before anything is queued).
static GenRequest make_request(const tok::Tokenizer& tk, const std::string& prompt, const json& b, int64_t n_ctx,
                               int64_t n_predict) {
  GenRequest g;
  // The rendered chat prompt may already start with the BOS text; do not add a second one.
  const auto& v = tk.vocab();
  bool add_special = true;
  if (v.bos != tok::kNoToken) {
    const std::string bos = tk.token_to_piece(v.bos, true);
    if (!bos.empty() && prompt.compare(0, bos.size(), bos) == 0) add_special = false;
  }
  g.prompt = tk.tokenize(prompt, add_special, /*parse_special=*/true);
  if (g.prompt.empty()) throw ApiError(400, "the prompt is empty", "prompt");
  if (static_cast<int64_t>(g.prompt.size()) >= n_ctx) {
    throw ApiError(400,
                   "the prompt is " + std::to_string(g.prompt.size()) + " tokens, the context holds " +
                       std::to_string(n_ctx) + " (start the server with a larger -c)",
                   "prompt", "invalid_request_error", "context_length_exceeded");
  }
  if (n_predict < -1) throw ApiError(400, "the token limit must be -1 (none) or >= 0");
  g.n_predict = static_cast<int32_t>(std::min<int64_t>(n_predict, INT32_MAX));
  g.stop = get_strings(b, "stop");
  try {
    g.sampler = std::make_unique<sampling::Sampler>(sampling_params(b), tk, static_cast<int32_t>(n_ctx));
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    throw ApiError(400, std::string("bad sampling parameters: ") + e.what());
  }
  return g;
}

HttpReply Routes::completion_native(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"prompt", "n_predict", "temperature", "top_k", "top_p", "min_p", "seed", "stop", "stream",
                   "repeat_penalty", "presence_penalty", "frequency_penalty"});
  if (!has_field(b, "prompt") || !b.at("prompt").is_string()) {
    throw ApiError(400, "'prompt' must be a string (token arrays are not implemented)", "prompt");
  }
  const bool stream = get_bool(b, "stream", false);
  GenRequest g = make_request(tk_, b.at("prompt").get<std::string>(), b, cfg_.n_ctx, get_int(b, "n_predict", -1));
  HttpReply r;
  r.stream = engine_.submit(std::move(g));
  const std::string model = cfg_.alias;
  const auto final_fields = [model](const GenEvent& e) {
    return json{{"stop", true},
                {"model", model},
                {"tokens_predicted", e.n_gen},
                {"tokens_evaluated", e.n_prompt},
                {"stop_type", stop_type(e.finish)},
                {"truncated", false}};
  };
  if (stream) {
    r.sse = true;
    r.on_event = [final_fields](const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) return sse(generation_error(e).body());
      std::string out;
      if (!e.text.empty()) out += sse({{"content", e.text}, {"stop", false}});
      if (e.done) {
        json f = final_fields(e);
        f["content"] = "";
        out += sse(f);
      }
      return out;
    };
  } else {
    r.on_done = [final_fields](const std::string& all, const GenEvent& e) {
      if (e.finish == Finish::kError) return json_reply(generation_error(e).body(), 500);
      json f = final_fields(e);
      f["content"] = all;
      return json_reply(f);
    };
  }
  return r;
}

HttpReply Routes::completion_oai(const std::string& text) {
  const json b = parse_body(text);
  check_fields(b, {"model", "prompt", "max_tokens", "temperature", "top_p", "top_k", "min_p", "stop", "seed", "stream",
                   "stream_options", "echo", "n", "presence_penalty", "frequency_penalty", "user", "logprobs"});
  check_single_choice(b);
  if (get_bool(b, "echo", false)) throw ApiError(400, "'echo' is not implemented by strix serve", "echo");
  if (has_field(b, "logprobs")) throw ApiError(400, "'logprobs' is not implemented by strix serve", "logprobs");
  std::string prompt;
  if (has_field(b, "prompt") && b.at("prompt").is_string()) {
    prompt = b.at("prompt").get<std::string>();
  } else if (has_field(b, "prompt") && b.at("prompt").is_array() && b.at("prompt").size() == 1 &&
             b.at("prompt")[0].is_string()) {
    prompt = b.at("prompt")[0].get<std::string>();
  } else {
    throw ApiError(400, "'prompt' must be a string (several prompts and token arrays are not implemented)", "prompt");
  }
  const bool stream = get_bool(b, "stream", false);
  const bool usage = include_usage(b);
  GenRequest g = make_request(tk_, prompt, b, cfg_.n_ctx, get_int(b, "max_tokens", -1));
  HttpReply r;
  r.stream = engine_.submit(std::move(g));
  const json head = {{"id", random_id("cmpl-")},
                     {"object", "text_completion"},
                     {"created", static_cast<int64_t>(std::time(nullptr))},
                     {"model", cfg_.alias}};
  const auto choice = [](const std::string& t, const json& finish) {
    return json::array({{{"text", t}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}}});
  };
  if (stream) {
    r.sse = true;
    r.on_event = [head, choice, usage](const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) return sse(generation_error(e).body()) + "data: [DONE]\n\n";
      std::string out;
      if (!e.text.empty()) {
        json c = head;
        c["choices"] = choice(e.text, nullptr);
        out += sse(c);
      }
      if (e.done) {
        json c = head;
        c["choices"] = choice("", oai_finish(e.finish));
        out += sse(c);
        if (usage) {
          json u = head;
          u["choices"] = json::array();
          u["usage"] = usage_json(e);
          out += sse(u);
        }
        out += "data: [DONE]\n\n";
      }
      return out;
    };
  } else {
    r.on_done = [head, choice](const std::string& all, const GenEvent& e) {
      if (e.finish == Finish::kError) return json_reply(generation_error(e).body(), 500);
      json c = head;
      c["choices"] = choice(all, oai_finish(e.finish));
      c["usage"] = usage_json(e);
      return json_reply(c);
    };
  }
  return r;
}

HttpReply Routes::chat_oai(const std::string& text) {
  const json b = parse_body(text);
  check_fields(
      b, {"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
          "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "seed", "stop", "n", "user", "logprobs"});
  check_single_choice(b);
  if (get_bool(b, "logprobs", false)) throw ApiError(400, "'logprobs' is not implemented by strix serve", "logprobs");
  const std::string prompt = render_chat(b, cfg_.chat_template, tk_);
  const bool stream = get_bool(b, "stream", false);
  const bool usage = include_usage(b);
  const int64_t limit = get_int(b, "max_completion_tokens", get_int(b, "max_tokens", -1));
  GenRequest g = make_request(tk_, prompt, b, cfg_.n_ctx, limit);
  HttpReply r;
  r.stream = engine_.submit(std::move(g));
  const json head = {{"id", random_id("chatcmpl-")},
                     {"object", stream ? "chat.completion.chunk" : "chat.completion"},
                     {"created", static_cast<int64_t>(std::time(nullptr))},
                     {"model", cfg_.alias},
                     {"system_fingerprint", "strix"}};
  if (stream) {
    r.sse = true;
    auto started = std::make_shared<bool>(false);
    r.on_event = [head, usage, started](const GenEvent& e) -> std::string {
      if (e.done && e.finish == Finish::kError) return sse(generation_error(e).body()) + "data: [DONE]\n\n";
      std::string out;
      const auto chunk = [&](const json& delta, const json& finish) {
        json c = head;
        c["choices"] =
            json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}});
        out += sse(c);
      };
      if (!*started) {
        // OpenAI opens with the role and an empty content
        chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
        *started = true;
      }
      if (!e.text.empty()) chunk({{"content", e.text}}, nullptr);
      if (e.done) {
        chunk(json::object(), oai_finish(e.finish));
        if (usage) {
          json u = head;
          u["choices"] = json::array();
          u["usage"] = usage_json(e);
          out += sse(u);
        }
        out += "data: [DONE]\n\n";
      }
      return out;
    };
  } else {
    r.on_done = [head](const std::string& all, const GenEvent& e) {
      if (e.finish == Finish::kError) return json_reply(generation_error(e).body(), 500);
      json c = head;
      c["choices"] = json::array({{{"index", 0},
                                   {"message", {{"role", "assistant"}, {"content", all}}},
                                   {"logprobs", nullptr},
                                   {"finish_reason", oai_finish(e.finish)}}});
      c["usage"] = usage_json(e);
      return json_reply(c);
    };
  }
  return r;
}

}  // namespace strix::server
