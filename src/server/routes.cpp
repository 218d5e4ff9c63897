#include "server/routes.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>

#include "core/error.h"
#include "server/api_common.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace strix::server {

namespace {

bool is_anthropic(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

// Anthropic's error shape: {"type": "error", "error": {"type": ..., "message": ...}}.
json anthropic_error(int status, const std::string& message) {
  const char* type = "invalid_request_error";
  if (status == 401) type = "authentication_error";
  if (status == 403) type = "permission_error";
  if (status == 404) type = "not_found_error";
  if (status == 413) type = "request_too_large";
  if (status >= 500) type = "api_error";
  return {{"type", "error"}, {"error", {{"type", type}, {"message", message}}}};
}

chat::ToolFormat template_tool_format(const std::string& tmpl) {
  return tmpl.empty() ? chat::ToolFormat::kNone : chat::detect_tool_format(tmpl);
}

}  // namespace

Routes::Routes(Engine& engine, const tok::Tokenizer& tk, const Model& model, RouteConfig cfg)
    : engine_(engine), tk_(tk), model_(model), cfg_(std::move(cfg)), created_(std::time(nullptr)) {
  chat_.tmpl = cfg_.chat_template;
  chat_.format = template_tool_format(cfg_.chat_template);
  chat_.extract_reasoning = cfg_.reasoning_format != "none";
  chat_.reasoning = cfg_.reasoning;
  chat_.tk = &tk_;
}

HttpReply Routes::handle(const HttpRequest& req) {
  const bool anthropic = is_anthropic(req.path);
  const auto fail = [&](const ApiError& e) {
    return json_reply(anthropic ? anthropic_error(e.status(), e.what()) : e.body(), e.status());
  };
  try {
    if (req.body_too_large) {
      throw ApiError(413, "the request body is larger than the server's limit of " + std::to_string(req.body_limit) +
                              " bytes (--body-limit)");
    }
    ++requests_;
    return route(req);
  } catch (const ApiError& e) {
    return fail(e);
  } catch (const Refusal& e) {
    return fail(ApiError(400, e.what()));
  } catch (const std::exception& e) {
    return fail(ApiError(500, e.what(), {}, "server_error"));
  }
}

HttpReply Routes::route(const HttpRequest& req) {
  const std::string& p = req.path;
  const bool get = req.method == "GET", post = req.method == "POST";
  if (p == "/health" || p == "/v1/health") {
    if (!get) throw ApiError(405, "use GET for " + p);
    return health();
  }
  // --path: static files, public as /health is (a web page loads before it can send a key);
  // the API's own GET routes come first
  const bool api_get = p == "/v1/models" || p == "/models" || p == "/props" || p == "/slots" || p == "/metrics";
  if (get && !api_get && !cfg_.static_dir.empty()) {
    if (std::optional<HttpReply> f = static_file(p)) return *f;
  }
  if (!cfg_.api_keys.empty()) {
    bool ok = false;
    for (const std::string& k : cfg_.api_keys) ok = ok || req.authorization == "Bearer " + k || req.x_api_key == k;
    if (!ok) throw ApiError(401, "Invalid API key", {}, "invalid_request_error", "invalid_api_key");
  }
  struct Route {
    const char* path;
    HttpReply (Routes::*fn)(const std::string&);
  };
  static const Route kPost[] = {
      {"/tokenize", &Routes::tokenize},
      {"/detokenize", &Routes::detokenize},
      {"/apply-template", &Routes::apply_template},
      {"/completion", &Routes::completion_native},
      {"/completions", &Routes::completion_native},
      {"/v1/completions", &Routes::completion_oai},
      {"/v1/chat/completions", &Routes::chat_oai},
      {"/chat/completions", &Routes::chat_oai},
      {"/v1/messages", &Routes::messages_anthropic},
      {"/v1/messages/count_tokens", &Routes::count_tokens_anthropic},
      {"/v1/responses", &Routes::responses},
      {"/responses", &Routes::responses},
  };
  if (p == "/v1/models" || p == "/models") {
    if (!get) throw ApiError(405, "use GET for " + p);
    return models();
  }
  if (p == "/props") {
    if (!get && !post) throw ApiError(405, "use GET (or POST with --props) for " + p);
    return props(req);
  }
  if (p == "/slots") {
    if (!get) throw ApiError(405, "use GET for " + p);
    if (!cfg_.slots) throw ApiError(501, "the slots endpoint is disabled (start the server with --slots)");
    return slots();
  }
  if (p == "/metrics") {
    if (!get) throw ApiError(405, "use GET for " + p);
    if (!cfg_.metrics) throw ApiError(501, "the metrics endpoint is disabled (start the server with --metrics)");
    return metrics();
  }
  for (const Route& r : kPost) {
    if (p != r.path) continue;
    if (!post) throw ApiError(405, "use POST for " + p);
    return (this->*r.fn)(req.body);
  }
  throw ApiError(404, "no route " + req.method + " " + p, {}, "not_found_error");
}

std::optional<HttpReply> Routes::static_file(const std::string& path) const {
  namespace fs = std::filesystem;
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos || path.find('\\') != std::string::npos) {
    return std::nullopt;
  }
  std::string rel = path.substr(1);
  if (rel.empty() || rel.back() == '/') rel += "index.html";
  for (size_t at = 0; at <= rel.size();) {  // no "." or ".." segment, no empty one
    const size_t end = std::min(rel.find('/', at), rel.size());
    const std::string seg = rel.substr(at, end - at);
    if (seg.empty() || seg == "." || seg == "..") return std::nullopt;
    at = end + 1;
  }
  std::error_code ec;
  const fs::path root = fs::canonical(cfg_.static_dir, ec);
  if (ec) return std::nullopt;
  const fs::path file = fs::canonical(root / rel, ec);
  if (ec || !fs::is_regular_file(file, ec)) return std::nullopt;
  const std::string r = root.string() + "/", f = file.string();
  if (f.compare(0, r.size(), r) != 0) return std::nullopt;  // a symlink out of the directory
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  HttpReply rep;
  rep.body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  static const std::pair<const char*, const char*> kTypes[] = {{".html", "text/html; charset=utf-8"},
                                                               {".htm", "text/html; charset=utf-8"},
                                                               {".js", "text/javascript; charset=utf-8"},
                                                               {".mjs", "text/javascript; charset=utf-8"},
                                                               {".css", "text/css; charset=utf-8"},
                                                               {".json", "application/json; charset=utf-8"},
                                                               {".svg", "image/svg+xml"},
                                                               {".png", "image/png"},
                                                               {".jpg", "image/jpeg"},
                                                               {".jpeg", "image/jpeg"},
                                                               {".gif", "image/gif"},
                                                               {".ico", "image/x-icon"},
                                                               {".webp", "image/webp"},
                                                               {".wasm", "application/wasm"},
                                                               {".txt", "text/plain; charset=utf-8"},
                                                               {".woff2", "font/woff2"}};
  rep.content_type = "application/octet-stream";
  const std::string ext = file.extension().string();
  for (const auto& [e, t] : kTypes) {
    if (ext == e) rep.content_type = t;
  }
  return rep;
}

HttpReply Routes::health() {
  const Engine::Stats st = engine_.stats();
  return json_reply({{"status", "ok"},
                     {"slots_idle", engine_.n_parallel() - st.processing},
                     {"slots_processing", st.processing},
                     {"requests_queued", st.queued},
                     {"requests_cancelled", st.cancelled}});
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

HttpReply Routes::props(const HttpRequest& req) {
  if (req.method == "POST") {
    if (!cfg_.props_write) {
      throw ApiError(403, "changing properties is disabled (start the server with --props)", {}, "permission_error");
    }
    // Nothing is writable at run time yet: every field is refused by name.
    const json b = parse_body(req.body);
    check_fields(b, {});
    return json_reply({{"success", true}});
  }
  const auto& v = tk_.vocab();
  json p = engine_.props_json();  // n_ctx, total_slots, default_generation_settings
  p["model_alias"] = cfg_.alias;
  p["model_path"] = cfg_.model_path;
  p["chat_template"] = cfg_.chat_template;
  p["chat_template_tool_format"] = chat::tool_format_name(chat_.format);
  p["reasoning_format"] = cfg_.reasoning_format;
  p["bos_token"] = v.bos != tok::kNoToken ? tk_.token_to_piece(v.bos, true) : "";
  p["eos_token"] = v.eos != tok::kNoToken ? tk_.token_to_piece(v.eos, true) : "";
  p["modalities"] = {{"vision", false}, {"audio", false}};
  p["build_info"] = "strix";
  return json_reply(p);
}

HttpReply Routes::slots() { return json_reply(engine_.slots_json()); }

HttpReply Routes::metrics() {
  HttpReply r;
  r.body = engine_.metrics_text();
  r.body += "# HELP strix:http_requests_total HTTP requests routed.\n# TYPE strix:http_requests_total counter\n";
  r.body += "strix:http_requests_total " + std::to_string(requests_) + "\n";
  r.content_type = "text/plain; version=0.0.4";
  return r;
}

}  // namespace strix::server
