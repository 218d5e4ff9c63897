// The HTTP side of `strix serve`: Boost.Beast over Asio on one I/O thread
// (the engine thread does all model work; handlers here only parse, tokenize
// and format). HTTP/1.1 keep-alive, CORS on every response and OPTIONS
// preflight, a request body limit (413), and replies that follow a running
// generation: either one JSON body at the end or an SSE stream written as
// chunks while tokens arrive. A client that goes away (a failed write, or EOF
// seen by a read kept pending during the generation) cancels its GenStreams.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/gen_stream.h"

namespace strix::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // target without the query string
  std::string body;
  std::string authorization;  // the Authorization header, or ""
  std::string x_api_key;      // the x-api-key header (Anthropic's clients), or ""
  // The body was over the limit (and not read): the handler answers 413 in its API's error shape.
  bool body_too_large = false;
  uint64_t body_limit = 0;
};

// One finished generation of a non-streaming reply: all its text and token
// log-probabilities, and its final event (finish reason, counts).
struct GenResult {
  std::string text;
  std::vector<TokenLogprobs> probs;
  GenEvent last;
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json; charset=utf-8";
  // Generations in flight (streams non-empty; several for OpenAI's n / best_of):
  // the reply is produced from their events.
  std::vector<std::shared_ptr<GenStream>> streams;
  bool sse = false;
  // sse: frames sent right after the headers (e.g. Anthropic's message_start).
  std::string sse_head;
  // sse: the SSE text to send for one event of streams[index].
  std::function<std::string(size_t index, const GenEvent&)> on_event;
  // sse: the text sent once every stream has ended (usage, "data: [DONE]").
  std::function<std::string()> on_end;
  // not sse: the reply once every stream has ended.
  std::function<HttpReply(std::vector<GenResult>& results)> on_done;
};

using Handler = std::function<HttpReply(const HttpRequest&)>;

class HttpServer {
 public:
  struct Options {
    std::string host = "127.0.0.1";
    int port = 8080;                    // 0: any free port (see port())
    uint64_t body_limit = 16ull << 20;  // bytes; larger requests get 413
  };
  // Binds and listens (throws strix::Error when it cannot).
  HttpServer(const Options& opts, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // Serves on the calling thread until SIGINT/SIGTERM or stop().
  void run();
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strix::server
