// The HTTP side of `strix serve`: Boost.Beast over Asio on one I/O thread
// (the engine thread does all model work; handlers here only parse, tokenize
// and format). HTTP/1.1 keep-alive, CORS on every response and OPTIONS
// preflight, a request body limit (413), and replies that follow a running
// generation: either one JSON body at the end or an SSE stream written as
// chunks while tokens arrive. A client that goes away (a failed write, or EOF
// seen by a read kept pending during the generation) cancels its GenStream.
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
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json; charset=utf-8";
  // A generation in flight (stream set): the reply is produced from its events.
  std::shared_ptr<GenStream> stream;
  bool sse = false;
  // sse: the SSE text ("data: ...\n\n" frames) to send for one event; the final event's text ends the stream.
  std::function<std::string(const GenEvent&)> on_event;
  // not sse: the reply once the final event came, given the whole text.
  std::function<HttpReply(const std::string& text, const GenEvent& last)> on_done;
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
