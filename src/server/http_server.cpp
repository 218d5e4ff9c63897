#include "server/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>

#include "core/error.h"

namespace strix::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string error_body(const std::string& message, const char* type) {
  // The OpenAI error shape; kept dependency-free here (routes build the richer ones).
  std::string esc;
  for (char c : message) {
    if (c == '"' || c == '\\') esc += '\\';
    esc += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return std::string("{\"error\":{\"message\":\"") + esc + "\",\"type\":\"" + type +
         "\",\"param\":null,\"code\":null}}";
}

void add_cors(http::fields& f) { f.set(http::field::access_control_allow_origin, "*"); }

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Handler& handler, uint64_t body_limit, asio::io_context& ioc)
      : socket_(std::move(socket)), handler_(handler), body_limit_(body_limit), ioc_(ioc) {}

  void start() { do_read(); }

 private:
  void do_read() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(body_limit_);
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  // curl sends "Expect: 100-continue" for larger bodies and waits for the go-ahead.
  void on_header(beast::error_code ec) {
    if (closed_) return;
    if (ec) {
      on_read(ec);
      return;
    }
    const auto& req = parser_->get();
    const auto expect = req.find(http::field::expect);
    const auto read_body = [self = shared_from_this()] {
      http::async_read(self->socket_, self->buffer_, *self->parser_,
                       [self](beast::error_code ec2, size_t) { self->on_read(ec2); });
    };
    if (expect != req.end() && beast::iequals(expect->value(), "100-continue") && !parser_->is_done()) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      asio::async_write(socket_, asio::buffer(kContinue, sizeof(kContinue) - 1),
                        [self = shared_from_this(), read_body](beast::error_code ec2, size_t) {
                          if (ec2) {
                            self->close();
                            return;
                          }
                          read_body();
                        });
      return;
    }
    read_body();
  }

  void on_read(beast::error_code ec) {
    if (closed_) return;
    if (ec == http::error::body_limit) {
      // The handler words the 413 in the error shape of the API the path belongs to.
      keep_alive_ = false;
      HttpRequest hr;
      hr.method = std::string(parser_->get().method_string());
      const std::string target(parser_->get().target());
      hr.path = target.substr(0, target.find('?'));
      hr.body_too_large = true;
      hr.body_limit = body_limit_;
      HttpReply r;
      try {
        r = handler_(hr);
      } catch (const std::exception&) {
        r.status = 413;
        r.body = error_body(
            "the request body is larger than the server's limit of " + std::to_string(body_limit_) + " bytes",
            "invalid_request_error");
      }
      r.streams.clear();
      send(std::move(r));
      return;
    }
    if (ec) {
      close();  // end of stream, reset, or a malformed request
      return;
    }
    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    if (req.method() == http::verb::options) {
      // CORS preflight: everything is allowed, auth is checked on the real request.
      auto res = std::make_shared<http::response<http::string_body>>(http::status::no_content, req.version());
      add_cors(res->base());
      res->set(http::field::access_control_allow_methods, "GET, POST, OPTIONS");
      const auto asked = req.find(http::field::access_control_request_headers);
      res->set(http::field::access_control_allow_headers,
               asked != req.end() ? std::string(asked->value()) : std::string("Content-Type, Authorization"));
      res->set(http::field::access_control_max_age, "86400");
      res->keep_alive(keep_alive_);
      res->prepare_payload();
      write_response(res);
      return;
    }
    HttpRequest hr;
    hr.method = std::string(req.method_string());
    const std::string target(req.target());
    hr.path = target.substr(0, target.find('?'));
    hr.body = req.body();
    const auto auth = req.find(http::field::authorization);
    if (auth != req.end()) hr.authorization = std::string(auth->value());
    const auto xkey = req.find("x-api-key");
    if (xkey != req.end()) hr.x_api_key = std::string(xkey->value());
    HttpReply reply;
    try {
      reply = handler_(hr);
    } catch (const std::exception& e) {
      reply = HttpReply();
      reply.status = 500;
      reply.body = error_body(e.what(), "server_error");
    }
    if (!reply.streams.empty()) {
      start_generation(std::move(reply));
    } else {
      send(std::move(reply));
    }
  }

  void send(HttpReply r) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "strix");
    res->set(http::field::content_type, r.content_type);
    add_cors(res->base());
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    write_response(res);
  }

  void write_response(const std::shared_ptr<http::response<http::string_body>>& res) {
    http::async_write(socket_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !self->keep_alive_) {
        self->close();
        return;
      }
      self->next_request();
    });
  }

  // After a reply: read the next request, once the disconnect probe is out of the way.
  void next_request() {
    if (closed_) return;
    if (probing_) {
      read_after_probe_ = true;
      beast::error_code ec;
      socket_.cancel(ec);  // only the probe is pending now
      return;
    }
    do_read();
  }

  void start_generation(HttpReply r) {
    gen_ = std::move(r);
    streams_ = gen_.streams;
    results_.assign(streams_.size(), GenResult());
    ended_.assign(streams_.size(), false);
    done_ = false;
    if (gen_.sse) {
      outbox_ =
          "HTTP/1.1 200 OK\r\nServer: strix\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
          "Access-Control-Allow-Origin: *\r\nTransfer-Encoding: chunked\r\n";
      outbox_ += keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
      add_chunk(gen_.sse_head);
    }
    std::weak_ptr<Session> weak = shared_from_this();
    asio::io_context& ioc = ioc_;
    for (auto& st : streams_) {
      st->set_notify([weak, &ioc] {
        asio::post(ioc, [weak] {
          if (auto s = weak.lock()) s->pump();
        });
      });
    }
    pump();
    if (!streams_.empty()) start_probe();
  }

  void add_chunk(const std::string& frame) {
    if (frame.empty()) return;
    char len[32];
    std::snprintf(len, sizeof(len), "%zx\r\n", frame.size());
    outbox_ += len;
    outbox_ += frame;
    outbox_ += "\r\n";
  }

  void start_probe() {
    if (closed_ || probing_) return;
    probing_ = true;
    socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->probing_ = false;
      if (self->closed_) return;
      if (!ec) {
        self->buffer_.commit(n);  // a pipelined request: parsed after this reply
        if (!self->streams_.empty()) {
          self->start_probe();
        } else if (self->read_after_probe_) {
          self->read_after_probe_ = false;
          self->do_read();
        }
        return;
      }
      if (ec == asio::error::operation_aborted && self->read_after_probe_) {
        self->read_after_probe_ = false;
        self->do_read();
        return;
      }
      self->close();  // the client went away: its generation is cancelled
    });
  }

  void pump() {
    if (closed_ || streams_.empty() || done_) return;
    bool all = true;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (ended_[i]) continue;
      for (GenEvent& e : streams_[i]->take()) {
        if (gen_.sse) {
          add_chunk(gen_.on_event(i, e));
        } else {
          results_[i].text += e.text;
          for (auto& p : e.probs) results_[i].probs.push_back(std::move(p));
        }
        if (e.done) {
          ended_[i] = true;
          if (!gen_.sse) results_[i].last = std::move(e);
          break;
        }
      }
      all = all && ended_[i];
    }
    if (all) {
      done_ = true;
      if (gen_.sse) {
        if (gen_.on_end) add_chunk(gen_.on_end());
        outbox_ += "0\r\n\r\n";
      }
    }
    if (gen_.sse) {
      flush();
    } else if (done_) {
      HttpReply final_reply = gen_.on_done(results_);
      final_reply.streams.clear();
      end_generation();
      send(std::move(final_reply));
    }
  }

  void flush() {
    if (writing_ || closed_) return;
    if (outbox_.empty()) {
      if (done_) {
        end_generation();
        if (keep_alive_) {
          next_request();
        } else {
          close();
        }
      }
      return;
    }
    inflight_ = std::move(outbox_);
    outbox_.clear();
    writing_ = true;
    asio::async_write(socket_, asio::buffer(inflight_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->close();
        return;
      }
      self->flush();
    });
  }

  void end_generation() {
    for (auto& st : streams_) st->set_notify(nullptr);
    streams_.clear();
    results_.clear();
    gen_ = HttpReply();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    for (auto& st : streams_) {
      st->cancel();
      st->set_notify(nullptr);
    }
    streams_.clear();
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  tcp::socket socket_;
  const Handler& handler_;
  uint64_t body_limit_;
  asio::io_context& ioc_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  bool closed_ = false;
  // the generation being followed
  HttpReply gen_;
  std::vector<std::shared_ptr<GenStream>> streams_;
  std::vector<GenResult> results_;
  std::vector<bool> ended_;
  bool done_ = false;
  bool probing_ = false;
  bool read_after_probe_ = false;
  bool writing_ = false;
  std::string outbox_, inflight_;
};

}  // namespace

struct HttpServer::Impl {
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  asio::signal_set signals{ioc, SIGINT, SIGTERM};
  Handler handler;
  Options opts;

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (!ec) {
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<Session>(std::move(socket), handler, opts.body_limit, ioc)->start();
      }
      if (acceptor.is_open()) accept();
    });
  }
};

HttpServer::HttpServer(const Options& opts, Handler handler) : impl_(std::make_unique<Impl>()) {
  impl_->handler = std::move(handler);
  impl_->opts = opts;
  beast::error_code ec;
  tcp::resolver resolver(impl_->ioc);
  const auto endpoints = resolver.resolve(opts.host, std::to_string(opts.port), ec);
  if (ec || endpoints.empty()) throw Error("cannot resolve --host '" + opts.host + "': " + ec.message());
  const tcp::endpoint ep = endpoints.begin()->endpoint();
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw Error("cannot listen on " + opts.host + ":" + std::to_string(opts.port) + ": " + ec.message());
  }
}

HttpServer::~HttpServer() = default;

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() {
  impl_->signals.async_wait([this](beast::error_code ec, int) {
    if (!ec) stop();
  });
  impl_->accept();
  impl_->ioc.run();
}

void HttpServer::stop() {
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->signals.cancel(ec);
    impl_->ioc.stop();
  });
}

}  // namespace strix::server
