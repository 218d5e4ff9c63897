// The endpoints of `strix serve` (llama-server's, OpenAI's, Anthropic's):
// they validate and tokenize requests, submit generations to the Engine and
// format the results (JSON or SSE). They run on the HTTP thread and never
// touch the model. One API per file:
//
//   routes.cpp           dispatch, auth, errors; GET /health, /v1/models, /props, /slots, /metrics
//   native.cpp           POST /tokenize, /detokenize, /apply-template, /completion
//   oai_completions.cpp  POST /v1/completions
//   oai_chat.cpp         POST /v1/chat/completions
//   anthropic.cpp        POST /v1/messages, /v1/messages/count_tokens
//   responses.cpp        POST /v1/responses
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/model.h"
#include "server/chat_io.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

struct RouteConfig {
  std::string alias;  // the model id clients see
  // non-empty: every route but /health needs "Authorization: Bearer KEY" or "x-api-key: KEY" with one of them
  std::vector<std::string> api_keys;
  std::string chat_template;  // Jinja source ("" : chat requests are refused)
  int64_t n_ctx = 0;
  std::string reasoning_format = "auto";  // none | deepseek | auto
  int32_t reasoning_budget = -1;          // --reasoning-budget: chat requests' default (server/reasoning.h)
  std::string reasoning_budget_message;   // --reasoning-budget-message
  int reasoning = -1;                     // --reasoning: 1 on, 0 off, -1 auto (ChatEnv::reasoning)
  bool metrics = false;                   // GET /metrics
  bool slots = true;                      // GET /slots
  bool props_write = false;               // POST /props
  std::string model_path;
  std::string static_dir;  // --path: GET requests for files under it are answered with them
};

class Routes {
 public:
  Routes(Engine& engine, const tok::Tokenizer& tk, const Model& model, RouteConfig cfg);
  HttpReply handle(const HttpRequest& req);

 private:
  HttpReply route(const HttpRequest& req);
  HttpReply health();
  // A file under static_dir for a GET of `path` ("/" and ".../" mean index.html),
  // or nothing: no such regular file inside the directory (".." never leaves it).
  std::optional<HttpReply> static_file(const std::string& path) const;
  HttpReply models() const;
  HttpReply props(const HttpRequest& req);
  HttpReply slots();
  HttpReply metrics();
  HttpReply tokenize(const std::string& body);
  HttpReply detokenize(const std::string& body);
  HttpReply apply_template(const std::string& body);
  HttpReply completion_native(const std::string& body);
  HttpReply completion_oai(const std::string& body);
  HttpReply chat_oai(const std::string& body);
  HttpReply messages_anthropic(const std::string& body);
  HttpReply count_tokens_anthropic(const std::string& body);
  HttpReply responses(const std::string& body);

  Engine& engine_;
  const tok::Tokenizer& tk_;
  const Model& model_;
  RouteConfig cfg_;
  ChatEnv chat_;
  int64_t created_;
  uint64_t requests_ = 0;  // HTTP thread only
};

}  // namespace strix::server
