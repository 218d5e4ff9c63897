// Typed reads of request JSON fields: a missing or null field gives the
// default, a field of the wrong type is a 400 naming it, and any field a
// route does not list is a 400 naming it (nothing is silently ignored).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strix::server {

// Rejects a field in neither `allowed` nor `also` (message says it is not
// implemented); `where` prefixes the field's name (e.g. "messages[2].").
void check_fields(const nlohmann::json& body, std::initializer_list<std::string_view> allowed,
                  std::initializer_list<std::string_view> also = {}, const std::string& where = "");

bool has_field(const nlohmann::json& body, const char* key);  // present and not null
double get_number(const nlohmann::json& body, const char* key, double def);
int64_t get_int(const nlohmann::json& body, const char* key, int64_t def);
bool get_bool(const nlohmann::json& body, const char* key, bool def);
std::string get_string(const nlohmann::json& body, const char* key, const std::string& def);
// A string or an array of strings (OpenAI's "stop"); empty strings are dropped.
std::vector<std::string> get_strings(const nlohmann::json& body, const char* key);

// A string, or an array of text parts (objects whose "type" is one of `types`,
// with a string "text" and no fields beyond `fields`), joined by `sep` (after
// a non-empty text, as llama.cpp's common_chat_msg joins typed text parts); a
// 400 naming the part otherwise. `what` names the parts in messages ("content blocks").
std::string text_parts(const nlohmann::json& c, const std::string& where, std::initializer_list<std::string_view> types,
                       std::initializer_list<std::string_view> fields, const std::string& what,
                       std::string_view sep = "");

// Parses a request body; a 400 for malformed JSON or a non-object.
nlohmann::json parse_body(const std::string& text);

}  // namespace strix::server
