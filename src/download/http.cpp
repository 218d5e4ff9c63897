#include "download/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include "core/error.h"

namespace strix::download {

namespace {

void global_init_once() {
  // curl_global_init is not thread-safe; everything after it is (per handle).
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("libcurl failed to initialise");
  });
}

struct Transfer {
  CURL* curl = nullptr;
  const HttpSink* sink = nullptr;
  HttpResponse* res = nullptr;
  bool aborted_by_sink = false;
};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  // A status line starts each response of a redirect chain: keep the last one's headers.
  if (line.rfind("HTTP/", 0) == 0) {
    t->res->headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  t->res->headers[name] = trim(line.substr(colon + 1));
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t len = size * n;
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (t->sink && *t->sink && status >= 200 && status < 300) {
    if (!(*t->sink)(status, data, len)) {
      t->aborted_by_sink = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    return len;
  }
  constexpr size_t kMaxErrorBody = 64 * 1024;
  if (t->sink && *t->sink) {
    if (t->res->body.size() < kMaxErrorBody)
      t->res->body.append(data, std::min(len, kMaxErrorBody - t->res->body.size()));
  } else {
    t->res->body.append(data, len);
  }
  return len;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string url_origin(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t path = url.find('/', scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

HttpResponse http_fetch(const HttpRequest& req, const HttpSink& sink) {
  global_init_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw Error("libcurl could not create a transfer handle");
  HttpResponse res;
  Transfer t{curl.get(), &sink, &res, false};

  curl_slist* list = nullptr;
  for (const auto& h : req.headers) list = curl_slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(list, curl_slist_free_all);

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: safe in threads
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, req.connect_timeout_s);
  // A stalled transfer (under 1 byte/s for 30 s) counts as cut, so a resume can follow.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (req.head) curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  if (req.follow_redirects) {
    // libcurl does not send our Authorization header to another host (the CDN).
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  }
  std::string range;
  if (req.range_from > 0) {
    range = std::to_string(req.range_from) + "-";
    curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  }

  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res.status);
  if (rc != CURLE_OK) {
    res.network_error = t.aborted_by_sink ? "aborted while writing the file" : curl_easy_strerror(rc);
  }
  return res;
}

}  // namespace strix::download
