// The endpoints of `strix serve` (llama-server's and OpenAI's): they validate
// and tokenize requests, submit generations to the Engine and format the
// results (JSON or SSE). They run on the HTTP thread and never touch the model.
//
//   GET  /health, /v1/models (/models)
//   POST /tokenize, /detokenize, /apply-template
//   POST /completion (llama-server native), /v1/completions, /v1/chat/completions
#pragma once

#include <cstdint>
#include <string>

#include "models/model.h"
#include "server/engine.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"

namespace strix::server {

struct RouteConfig {
  std::string alias;          // the model id clients see
  std::string api_key;        // non-empty: every route but /health needs "Authorization: Bearer KEY"
  std::string chat_template;  // Jinja source ("" : chat requests are refused)
  int64_t n_ctx = 0;
};

class Routes {
 public:
  Routes(Engine& engine, const tok::Tokenizer& tk, const Model& model, RouteConfig cfg);
  HttpReply handle(const HttpRequest& req);

 private:
  HttpReply route(const HttpRequest& req);
  HttpReply tokenize(const std::string& body);
  HttpReply detokenize(const std::string& body);
  HttpReply apply_template(const std::string& body);
  HttpReply completion_native(const std::string& body);
  HttpReply completion_oai(const std::string& body);
  HttpReply chat_oai(const std::string& body);
  HttpReply models() const;

  Engine& engine_;
  const tok::Tokenizer& tk_;
  const Model& model_;
  RouteConfig cfg_;
  int64_t created_;
};

}  // namespace strix::server
