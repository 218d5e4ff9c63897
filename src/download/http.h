// A thin libcurl client for the hub: HEAD for metadata, GET into memory (the
// manifest) or into a callback (a model file), optional Range. Network failures
// (no route, refused, timeout, cut transfer) come back as `network_error`, not as
// exceptions, because the caller decides between "use the cache" and an error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace strix::download {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  bool head = false;                 // HEAD instead of GET
  bool follow_redirects = false;     // follow Location (GET to the CDN)
  uint64_t range_from = 0;           // > 0: "Range: bytes=N-"
  long connect_timeout_s = 10;
};

struct HttpResponse {
  long status = 0;                             // 0 when no HTTP answer came
  std::string network_error;                   // non-empty: the transfer failed below HTTP
  std::map<std::string, std::string> headers;  // of the last response; names lower-cased
  std::string body;                            // error bodies, or the whole body without a sink

  std::string header(const std::string& lower_name) const;
};

// Receives the body of a 2xx answer (with its status: 200, or 206 for a Range);
// returns false to abort the transfer.
using HttpSink = std::function<bool(long status, const char* data, size_t n)>;

// Sends one request. With a sink, 2xx bodies go to the sink and others to `body`
// (first 64 KiB); without one, every body goes to `body`.
HttpResponse http_fetch(const HttpRequest& req, const HttpSink& sink = nullptr);

// "https://host:port" of a URL (for resolving relative redirects and for messages).
std::string url_origin(const std::string& url);

}  // namespace strix::download
