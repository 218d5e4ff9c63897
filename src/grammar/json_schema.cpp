// JSON Schema -> GBNF, following llama.cpp's json-schema-to-grammar: rules
// are collected by name in a sorted map, names are derived from the property
// path, and primitives (value, object, string, number ...) are shared.
#include "grammar/json_schema.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/error.h"

namespace strix::grammar {
namespace {

using json = nlohmann::ordered_json;

constexpr int kNoMaxItems = std::numeric_limits<int>::max();
constexpr int64_t kNoMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

// Optional whitespace after a token: nothing, one space, or 1-2 newlines and indentation.
const char* const kSpaceRule = R"(| " " | "\n"{1,2} [ \t]{0,20})";

struct Builtin {
  std::string content;
  std::vector<std::string> deps;
};

const std::map<std::string, Builtin>& primitive_rules() {
  static const std::map<std::string, Builtin> rules = {
      {"boolean", {R"(("true" | "false") space)", {}}},
      {"decimal-part", {"[0-9]{1,16}", {}}},
      {"integral-part", {"[0] | [1-9] [0-9]{0,15}", {}}},
      {"number",
       {R"(("-"? integral-part) ("." decimal-part)? ([eE] [-+]? integral-part)? space)",
        {"integral-part", "decimal-part"}}},
      {"integer", {R"(("-"? integral-part) space)", {"integral-part"}}},
      {"value",
       {"object | array | string | number | boolean | null",
        {"object", "array", "string", "number", "boolean", "null"}}},
      {"object",
       {R"("{" space ( string ":" space value ("," space string ":" space value)* )? "}" space)", {"string", "value"}}},
      {"array", {R"("[" space ( value ("," space value)* )? "]" space)", {"value"}}},
      {"uuid",
       {R"("\"" [0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12} "\"" space)",
        {}}},
      {"char", {R"([^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4}))", {}}},
      {"string", {R"("\"" char* "\"" space)", {"char"}}},
      {"null", {R"("null" space)", {}}},
  };
  return rules;
}

const std::map<std::string, Builtin>& format_rules() {
  static const std::map<std::string, Builtin> rules = {
      {"date", {R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [1-2] [0-9] | "3" [0-1] ))", {}}},
      {"time",
       {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{3} )? ( "Z" | ( "+" | "-" ) ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
        {}}},
      {"date-time", {R"(date "T" time)", {"date", "time"}}},
      {"date-string", {R"("\"" date "\"" space)", {"date"}}},
      {"time-string", {R"("\"" time "\"" space)", {"time"}}},
      {"date-time-string", {R"("\"" date-time "\"" space)", {"date-time"}}},
  };
  return rules;
}

bool is_reserved_name(const std::string& name) {
  return name == "root" || primitive_rules().count(name) != 0 || format_rules().count(name) != 0;
}

std::string repeat(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// Runs of characters outside [a-zA-Z0-9-] become one '-'.
std::string rule_name_chars(const std::string& name) {
  std::string out;
  bool in_bad = false;
  for (char c : name) {
    const bool ok = ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '-';
    if (ok) {
      out += c;
      in_bad = false;
    } else if (!in_bad) {
      out += '-';
      in_bad = true;
    }
  }
  return out;
}

// A GBNF string literal.
std::string format_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\r':
        out += "\\r";
        break;
      case '\n':
        out += "\\n";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        out += c;
    }
  }
  return out + "\"";
}

// ITEM repeated [min, max] times, with SEPARATOR between items.
std::string build_repetition(const std::string& item, int min_items, int max_items, const std::string& sep = "") {
  const bool has_max = max_items != kNoMaxItems;
  if (max_items == 0) return "";
  if (min_items == 0 && max_items == 1) return item + "?";
  if (sep.empty()) {
    if (min_items == 1 && !has_max) return item + "+";
    if (min_items == 0 && !has_max) return item + "*";
    return item + "{" + std::to_string(min_items) + "," + (has_max ? std::to_string(max_items) : "") + "}";
  }
  std::string result = item + " " +
                       build_repetition("(" + sep + " " + item + ")", min_items == 0 ? 0 : min_items - 1,
                                        has_max ? max_items - 1 : max_items);
  if (min_items == 0) result = "(" + result + ")?";
  return result;
}

// Integers in [min, max] (either may be open) as digit-by-digit alternatives.
class IntRange {
 public:
  explicit IntRange(std::ostringstream& out) : out_(out) {}

  void build(int64_t min_value, int64_t max_value, int decimals_left = 16, bool top_level = true) {
    const bool has_min = min_value != kNoMin;
    const bool has_max = max_value != kNoMax;
    if (has_min && has_max) {
      if (min_value < 0 && max_value < 0) {
        out_ << "\"-\" (";
        build(-max_value, -min_value, decimals_left, true);
        out_ << ")";
        return;
      }
      if (min_value < 0) {
        out_ << "\"-\" (";
        build(0, -min_value, decimals_left, true);
        out_ << ") | ";
        min_value = 0;
      }
      std::string min_s = std::to_string(min_value);
      const std::string max_s = std::to_string(max_value);
      for (size_t digits = min_s.size(); digits < max_s.size(); ++digits) {
        uniform_range(min_s, repeat("9", digits));
        min_s.assign(1, '1');
        min_s.append(digits, '0');
        out_ << " | ";
      }
      uniform_range(min_s, max_s);
      return;
    }
    const int less_decimals = std::max(decimals_left - 1, 1);
    if (has_min) {
      if (min_value < 0) {
        out_ << "\"-\" (";
        build(kNoMin, -min_value, decimals_left, false);
        out_ << ") | [0] | [1-9] ";
        more_digits(0, decimals_left - 1);
      } else if (min_value == 0) {
        if (top_level) {
          out_ << "[0] | [1-9] ";
          more_digits(0, less_decimals);
        } else {
          more_digits(1, decimals_left);
        }
      } else if (min_value <= 9) {
        const char c = static_cast<char>('0' + min_value);
        const char range_start = top_level ? '1' : '0';
        if (c > range_start) {
          digit_range(range_start, static_cast<char>(c - 1));
          out_ << " ";
          more_digits(1, less_decimals);
          out_ << " | ";
        }
        digit_range(c, '9');
        out_ << " ";
        more_digits(0, less_decimals);
      } else {
        const std::string min_s = std::to_string(min_value);
        const int len = static_cast<int>(min_s.size());
        const char c = min_s[0];
        if (c > '1') {
          digit_range(top_level ? '1' : '0', static_cast<char>(c - 1));
          out_ << " ";
          more_digits(len, less_decimals);
          out_ << " | ";
        }
        digit_range(c, c);
        out_ << " (";
        build(std::stoll(min_s.substr(1)), kNoMax, less_decimals, false);
        out_ << ")";
        if (c < '9') {
          out_ << " | ";
          digit_range(static_cast<char>(c + 1), '9');
          out_ << " ";
          more_digits(len - 1, less_decimals);
        }
      }
      return;
    }
    if (has_max) {
      if (max_value >= 0) {
        if (top_level) {
          out_ << "\"-\" [1-9] ";
          more_digits(0, less_decimals);
          out_ << " | ";
        }
        build(0, max_value, decimals_left, true);
      } else {
        out_ << "\"-\" (";
        build(-max_value, kNoMax, decimals_left, false);
        out_ << ")";
      }
      return;
    }
    throw Error("json schema: an integer range needs a minimum or a maximum");
  }

 private:
  void digit_range(char from, char to) {
    out_ << "[";
    if (from == to) {
      out_ << from;
    } else {
      out_ << from << "-" << to;
    }
    out_ << "]";
  }
  void more_digits(int min_digits, int max_digits) {
    out_ << "[0-9]";
    if (min_digits == max_digits && min_digits == 1) return;
    out_ << "{" << min_digits;
    if (max_digits != min_digits) {
      out_ << ",";
      if (max_digits != std::numeric_limits<int>::max()) out_ << max_digits;
    }
    out_ << "}";
  }
  // Numbers of equal length between from and to.
  void uniform_range(std::string_view from, std::string_view to) {
    size_t i = 0;
    while (i < from.size() && i < to.size() && from[i] == to[i]) ++i;
    if (i > 0) out_ << "\"" << from.substr(0, i) << "\"";
    if (i >= from.size() || i >= to.size()) return;
    if (i > 0) out_ << " ";
    const size_t sub_len = from.size() - i - 1;
    if (sub_len == 0) {
      out_ << "[" << from[i] << "-" << to[i] << "]";
      return;
    }
    const std::string from_sub(from.substr(i + 1)), to_sub(to.substr(i + 1));
    const std::string zeros = repeat("0", sub_len), nines = repeat("9", sub_len);
    bool to_reached = false;
    out_ << "(";
    if (from_sub == zeros) {
      digit_range(from[i], static_cast<char>(to[i] - 1));
      out_ << " ";
      more_digits(static_cast<int>(sub_len), static_cast<int>(sub_len));
    } else {
      out_ << "[" << from[i] << "] (";
      uniform_range(from_sub, nines);
      out_ << ")";
      if (from[i] < to[i] - 1) {
        out_ << " | ";
        if (to_sub == nines) {
          digit_range(static_cast<char>(from[i] + 1), to[i]);
          to_reached = true;
        } else {
          digit_range(static_cast<char>(from[i] + 1), static_cast<char>(to[i] - 1));
        }
        out_ << " ";
        more_digits(static_cast<int>(sub_len), static_cast<int>(sub_len));
      }
    }
    if (!to_reached) {
      out_ << " | ";
      digit_range(to[i], to[i]);
      out_ << " ";
      uniform_range(zeros, to_sub);
    }
    out_ << ")";
  }

  std::ostringstream& out_;
};

// Keywords whose constraint the grammar would silently not enforce.
const std::set<std::string>& unenforced_keywords() {
  static const std::set<std::string> k = {
      "not",
      "if",
      "then",
      "else",
      "multipleOf",
      "uniqueItems",
      "patternProperties",
      "propertyNames",
      "minProperties",
      "maxProperties",
      "contains",
      "minContains",
      "maxContains",
      "dependentRequired",
      "dependentSchemas",
      "dependencies",
      "unevaluatedProperties",
      "unevaluatedItems",
      "additionalItems",
      "$dynamicRef",
  };
  return k;
}

class Converter {
 public:
  explicit Converter(const JsonSchemaOptions& opt) : opt_(opt) { rules_["space"] = kSpaceRule; }

  void resolve_refs(json& schema) {
    hoist_defs(schema);
    std::function<void(json&)> walk = [&](json& n) {
      if (n.is_array()) {
        for (json& x : n) walk(x);
        return;
      }
      if (!n.is_object()) return;
      if (!n.contains("$ref")) {
        for (auto& [key, value] : n.items()) walk(value);
        return;
      }
      if (!n["$ref"].is_string()) throw Error("json schema: $ref must be a string");
      const std::string ref = n["$ref"].get<std::string>();
      if (refs_.count(ref)) return;
      if (ref.rfind("https://", 0) == 0 || ref.rfind("http://", 0) == 0) {
        throw Refusal("json schema: remote $ref '" + ref + "' is not fetched; inline it under #/$defs");
      }
      if (ref.rfind("#/", 0) != 0) throw Refusal("json schema: unsupported $ref '" + ref + "' (only #/... pointers)");
      json target = schema;
      std::string pointer = ref.substr(2);
      size_t start = 0;
      for (;;) {
        const size_t slash = pointer.find('/', start);
        const std::string sel = pointer.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (target.is_object() && target.contains(sel)) {
          json next = target[sel];
          target = std::move(next);
        } else if (target.is_array() && !sel.empty() && sel.find_first_not_of("0123456789") == std::string::npos &&
                   std::stoull(sel) < target.size()) {
          json next = target[std::stoull(sel)];
          target = std::move(next);
        } else {
          throw Error("json schema: cannot resolve $ref '" + ref + "': no '" + sel + "'");
        }
        if (slash == std::string::npos) break;
        start = slash + 1;
      }
      refs_[ref] = target;
    };
    walk(schema);
  }

  std::string visit(const json& schema, const std::string& name) {
    if (!schema.is_object()) {
      if (schema.is_boolean() && schema.get<bool>())
        return add_rule(name.empty() ? "root" : name, add_primitive("value"));
      throw Refusal("json schema: a schema must be an object (got " + schema.dump() + ")");
    }
    if (opt_.refuse_unenforced) check_keywords(schema);
    const json type = schema.contains("type") ? schema["type"] : json();
    std::string format;
    if (schema.contains("format")) {
      if (!schema["format"].is_string()) throw Error("json schema: \"format\" must be a string");
      format = schema["format"].get<std::string>();
    }
    const std::string rule_name = is_reserved_name(name) ? name + "-" : name.empty() ? "root" : name;
    const auto is = [&](const char* t) { return type.is_string() && type.get<std::string>() == t; };

    if (schema.contains("$ref")) return add_rule(rule_name, resolve_ref(schema["$ref"].get<std::string>()));
    if (schema.contains("oneOf") || schema.contains("anyOf")) {
      const json& alts = schema.contains("oneOf") ? schema["oneOf"] : schema["anyOf"];
      if (!alts.is_array()) throw Error("json schema: anyOf/oneOf must be an array");
      return add_rule(rule_name, union_rule(name, std::vector<json>(alts.begin(), alts.end())));
    }
    if (type.is_array()) {
      std::vector<json> alts;
      for (const json& t : type) {
        json copy = schema;
        copy["type"] = t;
        alts.push_back(std::move(copy));
      }
      return add_rule(rule_name, union_rule(name, alts));
    }
    if (schema.contains("const")) return add_rule(rule_name, format_literal(schema["const"].dump()) + " space");
    if (schema.contains("enum")) {
      if (!schema["enum"].is_array()) throw Error("json schema: enum must be an array");
      std::vector<std::string> values;
      for (const json& v : schema["enum"]) values.push_back(format_literal(v.dump()));
      return add_rule(rule_name, "(" + join(values, " | ") + ") space");
    }
    if ((type.is_null() || is("object")) &&
        (schema.contains("properties") ||
         (schema.contains("additionalProperties") && schema["additionalProperties"] != json(true)))) {
      std::set<std::string> required;
      if (schema.contains("required") && schema["required"].is_array()) {
        for (const json& r : schema["required"]) {
          if (r.is_string()) required.insert(r.get<std::string>());
        }
      }
      std::vector<std::pair<std::string, json>> props;
      if (schema.contains("properties")) {
        if (!schema["properties"].is_object()) throw Error("json schema: properties must be an object");
        for (const auto& [k, v] : schema["properties"].items()) props.emplace_back(k, v);
      }
      return add_rule(rule_name,
                      object_rule(props, required, name,
                                  schema.contains("additionalProperties") ? schema["additionalProperties"] : json()));
    }
    if ((type.is_null() || is("object") || is("string")) && schema.contains("allOf"))
      return all_of(schema, name, rule_name);
    if ((type.is_null() || is("array")) && (schema.contains("items") || schema.contains("prefixItems"))) {
      const json items = schema.contains("items") ? schema["items"] : schema["prefixItems"];
      if (items.is_array()) {
        std::string rule = "\"[\" space ";
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) rule += " \",\" space ";
          rule += visit(items[i], name + (name.empty() ? "" : "-") + "tuple-" + std::to_string(i));
        }
        return add_rule(rule_name, rule + " \"]\" space");
      }
      const std::string item = visit(items, name + (name.empty() ? "" : "-") + "item");
      const int min_items = schema.contains("minItems") ? int_field(schema, "minItems") : 0;
      const int max_items = schema.contains("maxItems") && schema["maxItems"].is_number_integer()
                                ? int_field(schema, "maxItems")
                                : kNoMaxItems;
      if (min_items > max_items) throw Error("json schema: minItems above maxItems");
      return add_rule(rule_name,
                      "\"[\" space " + build_repetition(item, min_items, max_items, "\",\" space") + " \"]\" space");
    }
    if ((type.is_null() || is("string")) && schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) throw Error("json schema: pattern must be a string");
      return visit_pattern(schema["pattern"].get<std::string>(), rule_name);
    }
    if ((type.is_null() || is("string")) && is_uuid_format(format)) {
      return add_primitive(rule_name == "root" ? "root" : format, primitive_rules().at("uuid"));
    }
    if ((type.is_null() || is("string")) && format_rules().count(format + "-string")) {
      const std::string prim = format + "-string";
      return add_rule(rule_name, add_primitive(prim, format_rules().at(prim)));
    }
    if (is("string") && (schema.contains("minLength") || schema.contains("maxLength"))) {
      const std::string char_rule = add_primitive("char");
      const int min_len = schema.contains("minLength") ? int_field(schema, "minLength") : 0;
      const int max_len = schema.contains("maxLength") ? int_field(schema, "maxLength") : kNoMaxItems;
      if (min_len > max_len) throw Error("json schema: minLength above maxLength");
      return add_rule(rule_name, "\"\\\"\" " + build_repetition(char_rule, min_len, max_len) + " \"\\\"\" space");
    }
    if (is("integer") && (schema.contains("minimum") || schema.contains("exclusiveMinimum") ||
                          schema.contains("maximum") || schema.contains("exclusiveMaximum"))) {
      int64_t lo = kNoMin, hi = kNoMax;
      if (schema.contains("minimum")) {
        lo = int64_field(schema, "minimum");
      } else if (schema.contains("exclusiveMinimum")) {
        lo = int64_field(schema, "exclusiveMinimum") + 1;
      }
      if (schema.contains("maximum")) {
        hi = int64_field(schema, "maximum");
      } else if (schema.contains("exclusiveMaximum")) {
        hi = int64_field(schema, "exclusiveMaximum") - 1;
      }
      if (lo != kNoMin && hi != kNoMax && lo > hi) throw Error("json schema: integer minimum above its maximum");
      std::ostringstream out;
      out << "(";
      IntRange(out).build(lo, hi);
      out << ") space";
      return add_rule(rule_name, out.str());
    }
    if (schema.empty() || is("object")) return add_rule(rule_name, add_primitive("object"));
    if (type.is_null()) return add_rule(rule_name, add_primitive("value"));
    if (!type.is_string() || primitive_rules().count(type.get<std::string>()) == 0) {
      throw Refusal("json schema: unsupported type " + type.dump());
    }
    return add_primitive(rule_name == "root" ? "root" : type.get<std::string>(),
                         primitive_rules().at(type.get<std::string>()));
  }

  std::string format_grammar() const {
    std::string out;
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    return out;
  }

 private:
  static bool is_uuid_format(const std::string& f) {
    return f == "uuid" || (f.size() == 5 && f.rfind("uuid", 0) == 0 && f[4] >= '1' && f[4] <= '5');
  }

  static int int_field(const json& s, const char* key) {
    if (!s[key].is_number_integer()) throw Error(std::string("json schema: ") + key + " must be an integer");
    const int64_t v = s[key].get<int64_t>();
    if (v < 0 || v > INT_MAX) throw Error(std::string("json schema: ") + key + " out of range");
    return static_cast<int>(v);
  }
  // A bound as an integer (a fractional one is truncated, as llama.cpp does);
  // kept away from the int64 ends so that +1/-1 and negation cannot overflow.
  static int64_t int64_field(const json& s, const char* key) {
    const json& v = s[key];
    if (!v.is_number()) throw Error(std::string("json schema: ") + key + " must be a number");
    constexpr double kLimit = 9.0e18;
    const bool in_range = v.is_number_float()      ? std::abs(v.get<double>()) <= kLimit
                          : v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(kLimit)
                                                   : std::abs(static_cast<double>(v.get<int64_t>())) <= kLimit;
    if (!in_range) throw Error(std::string("json schema: ") + key + " is out of range");
    return v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
  }

  void check_keywords(const json& schema) const {
    for (const auto& [key, value] : schema.items()) {
      if (unenforced_keywords().count(key)) {
        throw Refusal("json schema keyword '" + key + "' is not supported (the grammar cannot enforce it)");
      }
    }
    const json type = schema.contains("type") ? schema["type"] : json();
    const bool integer = type.is_string() && type.get<std::string>() == "integer";
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (schema.contains(k) && !integer) {
        throw Refusal(std::string("json schema keyword '") + k +
                      "' is only supported with \"type\": \"integer\" (the grammar cannot bound other numbers)");
      }
    }
    if (schema.contains("format") && schema["format"].is_string()) {
      const std::string f = schema["format"].get<std::string>();
      if (!is_uuid_format(f) && format_rules().count(f + "-string") == 0) {
        throw Refusal("json schema string format '" + f + "' is not supported (date, time, date-time, uuid are)");
      }
    }
    if (schema.contains("items") && schema["items"].is_boolean()) {
      throw Refusal("json schema: boolean \"items\" is not supported");
    }
  }

  // Moves every nested $defs up to the root one (first definition of a name wins).
  static void hoist_defs(json& schema) {
    if (!schema.is_object()) return;
    json collected = json::object();
    std::function<void(json&)> collect = [&](json& node) {
      if (!node.is_object()) return;
      if (node.contains("$defs") && node["$defs"].is_object()) {
        for (auto& [k, v] : node["$defs"].items()) {
          if (!collected.contains(k)) collected[k] = v;
        }
        node.erase("$defs");
      }
      for (auto& [k, v] : node.items()) {
        if (v.is_object()) {
          collect(v);
        } else if (v.is_array()) {
          for (json& item : v) collect(item);
        }
      }
    };
    collect(schema);
    if (collected.empty()) return;
    if (!schema.contains("$defs")) schema["$defs"] = json::object();
    for (auto& [k, v] : collected.items()) {
      if (!schema["$defs"].contains(k)) schema["$defs"][k] = v;
    }
  }

  std::string add_rule(const std::string& name, const std::string& rule) {
    const std::string esc = rule_name_chars(name);
    const auto it = rules_.find(esc);
    if (it == rules_.end() || it->second == rule) {
      rules_[esc] = rule;
      return esc;
    }
    int i = 0;
    while (rules_.count(esc + std::to_string(i)) && rules_[esc + std::to_string(i)] != rule) ++i;
    const std::string key = esc + std::to_string(i);
    rules_[key] = rule;
    return key;
  }

  std::string add_primitive(const std::string& name) { return add_primitive(name, primitive_rules().at(name)); }
  std::string add_primitive(const std::string& name, const Builtin& rule) {
    const std::string n = add_rule(name, rule.content);
    for (const std::string& dep : rule.deps) {
      auto it = primitive_rules().find(dep);
      if (it == primitive_rules().end()) it = format_rules().find(dep);
      if (!rules_.count(dep)) add_primitive(dep, it->second);
    }
    return n;
  }

  std::string union_rule(const std::string& name, const std::vector<json>& alts) {
    std::vector<std::string> rules;
    for (size_t i = 0; i < alts.size(); ++i) {
      rules.push_back(visit(alts[i], name + (name.empty() ? "alternative-" : "-") + std::to_string(i)));
    }
    return join(rules, " | ");
  }

  std::string resolve_ref(const std::string& ref) {
    const size_t hash = ref.find('#');
    const std::string fragment = hash == std::string::npos ? ref : ref.substr(hash + 1);
    std::string name = "ref" + rule_name_chars(fragment);
    if (!rules_.count(name) && !refs_in_progress_.count(ref)) {
      refs_in_progress_.insert(ref);
      const json resolved = refs_.at(ref);
      name = visit(resolved, name);
      refs_in_progress_.erase(ref);
    }
    return name;
  }

  std::string all_of(const json& schema, const std::string& name, const std::string& rule_name) {
    std::set<std::string> required;
    std::vector<std::pair<std::string, json>> props;
    std::map<std::string, size_t> enum_counts;
    std::function<void(const json&, bool)> add = [&](const json& comp, bool is_required) {
      if (comp.contains("$ref")) {
        add(refs_.at(comp["$ref"].get<std::string>()), is_required);
      } else if (comp.contains("properties")) {
        for (const auto& [k, v] : comp["properties"].items()) {
          props.emplace_back(k, v);
          if (is_required) required.insert(k);
        }
      } else if (comp.contains("enum")) {
        for (const json& v : comp["enum"]) ++enum_counts[format_literal(v.dump())];
      } else if (opt_.refuse_unenforced) {
        throw Refusal("json schema: allOf component " + comp.dump() + " is not supported (only objects and enums)");
      }
    };
    for (const json& t : schema["allOf"]) {
      if (t.contains("anyOf")) {
        for (const json& tt : t["anyOf"]) add(tt, false);
      } else {
        add(t, true);
      }
    }
    if (!enum_counts.empty()) {
      std::vector<std::string> both;
      for (const auto& [lit, n] : enum_counts) {
        if (n == schema["allOf"].size()) both.push_back(lit);
      }
      if (!both.empty()) return add_rule(rule_name, "(" + join(both, " | ") + ") space");
    }
    return add_rule(rule_name, object_rule(props, required, name, json()));
  }

  // A JSON string that is none of `strings`, as a trie of negated classes.
  std::string not_strings(const std::vector<std::string>& strings) {
    struct Node {
      std::map<char, Node> children;
      bool end = false;
    };
    Node trie;
    for (const std::string& s : strings) {
      Node* n = &trie;
      for (char c : s) n = &n->children[c];
      n->end = true;
    }
    const std::string char_rule = add_primitive("char");
    const auto class_char = [](char c) {
      if (c == '"' || c == '\\' || c == ']' || c == '-' || c == '^' || c == '[') return std::string("\\") + c;
      return std::string(1, c);
    };
    std::ostringstream out;
    out << "[\"] ( ";
    std::function<void(const Node&)> walk = [&](const Node& node) {
      std::string rejects;
      bool first = true;
      for (const auto& [c, child] : node.children) {
        rejects += class_char(c);
        if (!first) out << " | ";
        first = false;
        out << "[" << class_char(c) << "]";
        if (!child.children.empty()) {
          out << " (";
          walk(child);
          out << ")";
        } else if (child.end) {
          out << " " << char_rule << "+";
        }
      }
      if (!node.children.empty()) {
        if (!first) out << " | ";
        // llama.cpp's class here is [^"<rejects>], which lets a raw control
        // character or a lone backslash start the key (invalid JSON); keep
        // to the characters its `char` rule allows.
        out << "[^\"\\\\\\x7F\\x00-\\x1F" << rejects << "] " << char_rule << "*";
      }
    };
    walk(trie);
    out << " )";
    if (!trie.end) out << "?";
    out << " [\"] space";
    return out.str();
  }

  std::string object_rule(const std::vector<std::pair<std::string, json>>& props, const std::set<std::string>& required,
                          const std::string& name, const json& additional) {
    std::vector<std::string> required_props, optional_props, names;
    std::map<std::string, std::string> kv_rules;
    const std::string prefix = name + (name.empty() ? "" : "-");
    for (const auto& [prop, prop_schema] : props) {
      const std::string value_rule = visit(prop_schema, prefix + prop);
      kv_rules[prop] =
          add_rule(prefix + prop + "-kv", format_literal(json(prop).dump()) + " space \":\" space " + value_rule);
      (required.count(prop) ? required_props : optional_props).push_back(prop);
      names.push_back(prop);
    }
    if ((additional.is_boolean() && additional.get<bool>()) || additional.is_object()) {
      const std::string sub = prefix + "additional";
      const std::string value_rule =
          additional.is_object() ? visit(additional, sub + "-value") : add_primitive("value");
      const std::string key_rule = names.empty() ? add_primitive("string") : add_rule(sub + "-k", not_strings(names));
      kv_rules["*"] = add_rule(sub + "-kv", key_rule + " \":\" space " + value_rule);
      optional_props.push_back("*");
    }
    std::string rule = "\"{\" space ";
    for (size_t i = 0; i < required_props.size(); ++i) {
      if (i > 0) rule += " \",\" space ";
      rule += kv_rules[required_props[i]];
    }
    if (!optional_props.empty()) {
      rule += " (";
      if (!required_props.empty()) rule += " \",\" space ( ";
      // Optional properties keep their order: each alternative starts at one of
      // them and may continue with any later ones.
      std::function<std::string(const std::vector<std::string>&, bool)> rest = [&](const std::vector<std::string>& ks,
                                                                                   bool first_optional) {
        std::string res;
        if (ks.empty()) return res;
        const std::string& k = ks[0];
        const std::string kv = kv_rules[k];
        const std::string comma_ref = "( \",\" space " + kv + " )";
        if (first_optional) {
          res = comma_ref + (k == "*" ? "*" : "?");
        } else {
          res = kv + (k == "*" ? " " + comma_ref + "*" : "");
        }
        if (ks.size() > 1) {
          res += " " + add_rule(prefix + k + "-rest", rest(std::vector<std::string>(ks.begin() + 1, ks.end()), true));
        }
        return res;
      };
      for (size_t i = 0; i < optional_props.size(); ++i) {
        if (i > 0) rule += " | ";
        rule += rest(std::vector<std::string>(optional_props.begin() + static_cast<ptrdiff_t>(i), optional_props.end()),
                     false);
      }
      if (!required_props.empty()) rule += " )";
      rule += " )?";
    }
    return rule + " \"}\" space";
  }

  // A regex "^...$" as rules for the string's content (the quotes around it
  // are added). Alternation, groups, classes, . and quantifiers * + ? {m,n}.
  std::string visit_pattern(const std::string& pattern, const std::string& name) {
    if (pattern.size() < 2 || pattern.front() != '^' || pattern.back() != '$') {
      throw Refusal("json schema: pattern '" + pattern + "' must start with '^' and end with '$'");
    }
    const std::string sub = pattern.substr(1, pattern.size() - 2);
    std::map<std::string, std::string> sub_rule_ids;
    size_t i = 0;
    const size_t length = sub.size();
    using Piece = std::pair<std::string, bool>;  // text, is_literal
    const auto to_rule = [](const Piece& p) { return p.second ? "\"" + p.first + "\"" : p.first; };
    const auto fail = [&](const std::string& what) -> void {
      throw Refusal("json schema: pattern '" + pattern + "': " + what);
    };
    static const std::string kNonLiteral = "|.()[]{}*+?";
    static const std::string kEscapedInRegexOnly = "^$.[]()|{}*+?/";
    const auto class_for = [](char e) -> const char* {
      switch (e) {
        case 'd':
          return "[0-9]";
        case 'D':
          return "[^0-9]";
        case 'w':
          return "[a-zA-Z0-9_]";
        case 'W':
          return "[^a-zA-Z0-9_]";
        case 's':
          return "[ \\t\\n\\r\\x0B\\x0C]";
        case 'S':
          return "[^ \\t\\n\\r\\x0B\\x0C]";
        default:
          return nullptr;
      }
    };
    int depth = 0;
    std::function<Piece()> transform = [&]() -> Piece {
      std::vector<Piece> seq;
      const auto join_seq = [&]() {
        std::vector<std::string> out;
        std::string literal;
        for (const Piece& p : seq) {
          if (p.second) {
            literal += p.first;
          } else {
            if (!literal.empty()) out.push_back("\"" + literal + "\"");
            literal.clear();
            out.push_back(p.first);
          }
        }
        if (!literal.empty()) out.push_back("\"" + literal + "\"");
        return Piece(join(out, " "), false);
      };
      while (i < length) {
        const char c = sub[i];
        if (c == '.') {
          seq.emplace_back(add_rule("dot", opt_.dotall ? "[\\U00000000-\\U0010FFFF]" : "[^\\x0A\\x0D]"), false);
          ++i;
        } else if (c == '(') {
          ++i;
          if (i < length && sub[i] == '?') {
            if (i + 1 < length && sub[i + 1] == ':') {
              i += 2;
            } else {
              fail("lookaround and named groups are not supported");
            }
          }
          ++depth;
          seq.emplace_back("(" + to_rule(transform()) + ")", false);
        } else if (c == ')') {
          ++i;
          if (depth == 0) fail("unbalanced ')'");
          --depth;
          return join_seq();
        } else if (c == '[') {
          std::string cls = "[";
          ++i;
          while (i < length && sub[i] != ']') {
            if (sub[i] == '\\' && i + 1 < length) {
              const char e = sub[i + 1];
              if (e == 'd') {
                cls += "0-9";
              } else if (e == 'w') {
                cls += "a-zA-Z0-9_";
              } else if (e == 's') {
                cls += " \\t\\n\\r\\x0B\\x0C";
              } else if (e == 'D' || e == 'W' || e == 'S') {
                fail(std::string("\\") + e + " inside a character class is not supported");
              } else if (e == '.' || e == '/' || e == '+' || e == '*' || e == '?' || e == '(' || e == ')' || e == '{' ||
                         e == '}' || e == '|' || e == '$') {
                cls += e;
              } else {
                cls += sub.substr(i, 2);
              }
              i += 2;
            } else {
              if (sub[i] == '"') cls += '\\';
              cls += sub[i];
              ++i;
            }
          }
          if (i >= length) fail("unbalanced '['");
          cls += ']';
          ++i;
          seq.emplace_back(cls, false);
        } else if (c == '|') {
          seq.emplace_back("|", false);
          ++i;
        } else if (c == '*' || c == '+' || c == '?') {
          if (seq.empty() || seq.back().first == "|") fail(std::string("nothing to repeat before '") + c + "'");
          seq.back() = Piece(to_rule(seq.back()) + c, false);
          ++i;
        } else if (c == '{') {
          std::string body;
          ++i;
          while (i < length && sub[i] != '}') body += sub[i++];
          if (i >= length) fail("unbalanced '{'");
          ++i;
          if (seq.empty() || seq.back().first == "|") fail("nothing to repeat before '{'");
          int min_times = 0, max_times = kNoMaxItems;
          const size_t comma = body.find(',');
          const auto number = [&](const std::string& s) {
            if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) {
              fail("invalid repetition {" + body + "}");
            }
            return std::stoi(s);
          };
          if (comma == std::string::npos) {
            min_times = max_times = number(body);
          } else {
            if (body.find(',', comma + 1) != std::string::npos) fail("invalid repetition {" + body + "}");
            if (comma > 0) min_times = number(body.substr(0, comma));
            if (comma + 1 < body.size()) max_times = number(body.substr(comma + 1));
          }
          if (max_times < min_times) fail("repetition maximum below its minimum");
          Piece& last = seq.back();
          std::string item = last.first;
          if (!last.second) {
            std::string& id = sub_rule_ids[item];
            if (id.empty()) id = add_rule(name + "-" + std::to_string(sub_rule_ids.size()), item);
            item = id;
          } else {
            item = "\"" + item + "\"";
          }
          last = Piece(build_repetition(item, min_times, max_times), false);
        } else {
          std::string literal;
          const auto non_literal = [&](char ch) { return kNonLiteral.find(ch) != std::string::npos; };
          while (i < length) {
            if (sub[i] == '\\' && i + 1 < length) {
              const char e = sub[i + 1];
              if (const char* cls = class_for(e)) {
                if (!literal.empty()) break;  // the class is its own item
                seq.emplace_back(cls, false);
                i += 2;
                break;
              }
              if (kEscapedInRegexOnly.find(e) != std::string::npos || e == '-' || e == '"') {
                literal += e == '"' ? "\\\"" : std::string(1, e);
              } else if (e == 'f') {
                literal += "\\x0C";
              } else if (e == 'v') {
                literal += "\\x0B";
              } else {
                literal += sub.substr(i, 2);  // \n \t \r \\ \xHH \uHHHH mean the same in GBNF
              }
              i += 2;
            } else if (sub[i] == '"') {
              literal += "\\\"";
              ++i;
            } else if (!non_literal(sub[i]) &&
                       (i == length - 1 || literal.empty() || sub[i + 1] == '.' || !non_literal(sub[i + 1]))) {
              literal += sub[i];
              ++i;
            } else {
              break;
            }
          }
          if (!literal.empty()) seq.emplace_back(literal, true);
        }
      }
      return join_seq();
    };
    const Piece body = transform();
    if (depth != 0) fail("unbalanced '('");
    return add_rule(name, "\"\\\"\" (" + to_rule(body) + ") \"\\\"\" space");
  }

  JsonSchemaOptions opt_;
  std::map<std::string, std::string> rules_;
  std::unordered_map<std::string, json> refs_;
  std::set<std::string> refs_in_progress_;
};

}  // namespace

std::string json_schema_to_grammar(const std::string& schema_json, const JsonSchemaOptions& options) {
  json schema;
  try {
    schema = json::parse(schema_json);
  } catch (const json::exception& e) {
    throw Error(std::string("json schema: not valid JSON: ") + e.what());
  }
  try {
    Converter c(options);
    c.resolve_refs(schema);
    c.visit(schema, "");
    return c.format_grammar();
  } catch (const json::exception& e) {
    throw Error(std::string("json schema: malformed schema: ") + e.what());
  } catch (const std::out_of_range& e) {
    throw Error(std::string("json schema: unresolved reference: ") + e.what());
  }
}

std::string builtin_json_grammar() {
  // Same language as llama.cpp's grammars/json.gbnf: an object at the top,
  // numbers with at most 16 integer digits, whitespace after every token.
  return R"(root ::= object
value ::= object | array | string | number | literal
literal ::= ("true" | "false" | "null") ws
object ::= "{" ws ( member ( "," ws member )* )? "}" ws
member ::= string ":" ws value
array ::= "[" ws ( value ( "," ws value )* )? "]" ws
string ::= "\"" ( plain | escape )* "\"" ws
plain ::= [^"\\\x7F\x00-\x1F]
escape ::= "\\" ( ["\\bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( [0-9] | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9] [1-9]{0,15} )? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";
}

}  // namespace strix::grammar
