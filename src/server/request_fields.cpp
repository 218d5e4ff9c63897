#include "server/request_fields.h"

#include <cmath>

#include "server/api_error.h"

namespace strix::server {

void check_fields(const nlohmann::json& body, std::initializer_list<std::string_view> allowed,
                  std::initializer_list<std::string_view> also, const std::string& where) {
  if (!body.is_object()) return;
  for (const auto& [key, value] : body.items()) {
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || a == key;
    for (std::string_view a : also) ok = ok || a == key;
    if (!ok) {
      throw ApiError(400, "Unsupported field '" + where + key + "': strix serve does not implement it", where + key);
    }
  }
}

bool has_field(const nlohmann::json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

double get_number(const nlohmann::json& body, const char* key, double def) {
  if (!has_field(body, key)) return def;
  const auto& v = body.at(key);
  if (!v.is_number()) throw ApiError(400, std::string("'") + key + "' must be a number", key);
  return v.get<double>();
}

int64_t get_int(const nlohmann::json& body, const char* key, int64_t def) {
  if (!has_field(body, key)) return def;
  const auto& v = body.at(key);
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() && std::fabs(v.get<double>()) < 9e15) {
    return static_cast<int64_t>(v.get<double>());
  }
  throw ApiError(400, std::string("'") + key + "' must be an integer", key);
}

bool get_bool(const nlohmann::json& body, const char* key, bool def) {
  if (!has_field(body, key)) return def;
  const auto& v = body.at(key);
  if (!v.is_boolean()) throw ApiError(400, std::string("'") + key + "' must be a boolean", key);
  return v.get<bool>();
}

std::string text_parts(const nlohmann::json& c, const std::string& where, std::initializer_list<std::string_view> types,
                       std::initializer_list<std::string_view> fields, const std::string& what,
                       std::string_view sep) {
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) throw ApiError(400, where + " must be a string or an array of " + what, where);
  std::string out;
  for (size_t j = 0; j < c.size(); ++j) {
    const std::string w = where + "[" + std::to_string(j) + "]";
    const std::string type = c[j].is_object() ? c[j].value("type", "") : "";
    bool known = false;
    for (std::string_view t : types) known = known || type == t;
    if (!known || !c[j].contains("text") || !c[j].at("text").is_string()) {
      std::string names;
      for (std::string_view t : types) names += (names.empty() ? "" : " and ") + std::string(t);
      throw ApiError(400, w + ": only " + names + " " + what + " are implemented", w + ".type");
    }
    check_fields(c[j], fields, {}, w + ".");
    if (!out.empty()) out += sep;
    out += c[j].at("text").get<std::string>();
  }
  return out;
}

std::string get_string(const nlohmann::json& body, const char* key, const std::string& def) {
  if (!has_field(body, key)) return def;
  const auto& v = body.at(key);
  if (!v.is_string()) throw ApiError(400, std::string("'") + key + "' must be a string", key);
  return v.get<std::string>();
}

std::vector<std::string> get_strings(const nlohmann::json& body, const char* key) {
  std::vector<std::string> out;
  if (!has_field(body, key)) return out;
  const auto& v = body.at(key);
  if (v.is_string()) {
    if (!v.get<std::string>().empty()) out.push_back(v.get<std::string>());
    return out;
  }
  if (!v.is_array()) throw ApiError(400, std::string("'") + key + "' must be a string or an array of strings", key);
  for (const auto& s : v) {
    if (!s.is_string()) throw ApiError(400, std::string("'") + key + "' must hold only strings", key);
    if (!s.get<std::string>().empty()) out.push_back(s.get<std::string>());
  }
  return out;
}

nlohmann::json parse_body(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

}  // namespace strix::server
