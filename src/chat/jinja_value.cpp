// Python semantics for Jinja values: formatting, comparison, JSON.
#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace strix::jinja {

const Value* DictData::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

void DictData::set(const std::string& key, Value v) {
  for (auto& kv : items)
    if (kv.first == key) { kv.second = std::move(v); return; }
  items.emplace_back(key, std::move(v));
}

Value Value::new_list(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind = ValueKind::kList;
  v.list = std::make_shared<ListData>();
  v.list->items = std::move(items);
  v.list->is_tuple = tuple;
  return v;
}

Value Value::new_lazy(std::vector<Value> items, const char* lazy_kind) {
  Value v = new_list(std::move(items));
  v.list->lazy_kind = lazy_kind;
  return v;
}

Value Value::deferred_generator(std::string error) {
  Value v = new_lazy({}, "generator");
  v.list->deferred_error = std::move(error);
  return v;
}

Value Value::new_dict() {
  Value v;
  v.kind = ValueKind::kDict;
  v.dict = std::make_shared<DictData>();
  return v;
}

Value Value::callable(NativeFn f) {
  Value v;
  v.kind = ValueKind::kCallable;
  v.fn = std::make_shared<NativeFn>(std::move(f));
  return v;
}

const char* type_name(const Value& v) {
  switch (v.kind) {
    case ValueKind::kUndefined: return "Undefined";
    case ValueKind::kNone: return "NoneType";
    case ValueKind::kBool: return "bool";
    case ValueKind::kInt: return "int";
    case ValueKind::kFloat: return "float";
    case ValueKind::kString: return "str";
    case ValueKind::kList: return !v.list->lazy_kind.empty() ? v.list->lazy_kind.c_str() : v.list->is_tuple ? "tuple" : "list";
    case ValueKind::kDict: return v.dict->is_namespace ? "Namespace" : "dict";
    case ValueKind::kCallable: return "function";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return false;
    case ValueKind::kBool: return v.b;
    case ValueKind::kInt: return v.i != 0;
    case ValueKind::kFloat: return v.f != 0.0;
    case ValueKind::kString: return !v.s.empty();
    case ValueKind::kList: return v.list->lazy_kind == "generator" || !v.list->items.empty();
    case ValueKind::kDict: return v.dict->is_namespace || !v.dict->items.empty();
    case ValueKind::kCallable: return true;
  }
  return false;
}

std::string float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: scientific when the
  // decimal exponent is < -4 or >= 16, else positional with at least ".0".
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  size_t epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  int exp = std::stoi(sci.substr(epos + 1));
  bool neg = mant[0] == '-';
  if (neg) mant.erase(0, 1);
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) { out += '.'; out.append(digits, 1); }
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += e;
  } else if (exp < 0) {
    out = "0.";
    out.append(size_t(-exp - 1), '0');
    out += digits;
  } else {
    if (digits.size() <= size_t(exp) + 1) {
      out = digits;
      out.append(size_t(exp) + 1 - digits.size(), '0');
      out += ".0";
    } else {
      out = digits.substr(0, size_t(exp) + 1);
      out += '.';
      out.append(digits, size_t(exp) + 1);
    }
  }
  if (neg) out.insert(0, 1, '-');
  return out;
}

static std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == q) { out += '\\'; out += char(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else out += char(c);
  }
  out += q;
  return out;
}

std::string to_repr(const Value& v) {
  switch (v.kind) {
    case ValueKind::kString: return v.safe ? "Markup(" + repr_string(v.s) + ")" : repr_string(v.s);
    case ValueKind::kList: {
      if (v.list->lazy_kind == "generator")
        throw Refusal("chat template prints a generator object (Python shows its memory address); add `| list`");
      if (!v.list->lazy_kind.empty()) {
        Value plain = Value::new_list(v.list->items);
        return v.list->lazy_kind + "(" + to_repr(plain) + ")";
      }
      bool tup = v.list->is_tuple;
      std::string out = tup ? "(" : "[";
      for (size_t k = 0; k < v.list->items.size(); ++k) {
        if (k) out += ", ";
        out += to_repr(v.list->items[k]);
      }
      if (tup && v.list->items.size() == 1) out += ",";
      return out + (tup ? ")" : "]");
    }
    case ValueKind::kDict: {
      std::string out = v.dict->is_namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& kv : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr_string(kv.first) + ": " + to_repr(kv.second);
      }
      return out + (v.dict->is_namespace ? "}>" : "}");
    }
    case ValueKind::kUndefined: return "Undefined";  // repr(Undefined), e.g. inside a printed list
    default: return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind) {
    case ValueKind::kUndefined: return "";
    case ValueKind::kNone: return "None";
    case ValueKind::kBool: return v.b ? "True" : "False";
    case ValueKind::kInt: return std::to_string(v.i);
    case ValueKind::kFloat: return float_repr(v.f);
    case ValueKind::kString: return v.s;
    case ValueKind::kCallable: return "<function>";
    default: return to_repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == ValueKind::kFloat || b.kind == ValueKind::kFloat) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ValueKind::kUndefined:
    case ValueKind::kNone: return true;
    case ValueKind::kString: return a.s == b.s;
    case ValueKind::kList: {
      if (!a.list->lazy_kind.empty() || !b.list->lazy_kind.empty()) return a.list == b.list;
      if (a.list->is_tuple != b.list->is_tuple || a.list->items.size() != b.list->items.size()) return false;
      for (size_t k = 0; k < a.list->items.size(); ++k)
        if (!equals(a.list->items[k], b.list->items[k])) return false;
      return true;
    }
    case ValueKind::kDict: {
      if (a.dict->is_namespace || b.dict->is_namespace) return a.dict == b.dict;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& kv : a.dict->items) {
        const Value* o = b.dict->find(kv.first);
        if (!o || !equals(kv.second, *o)) return false;
      }
      return true;
    }
    case ValueKind::kCallable: return a.fn == b.fn;
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind == ValueKind::kFloat || b.kind == ValueKind::kFloat) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    return a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : (a.s > b.s ? 1 : 0);  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.list->is_tuple == b.list->is_tuple) {
    size_t n = std::min(a.list->items.size(), b.list->items.size());
    for (size_t k = 0; k < n; ++k) {
      if (equals(a.list->items[k], b.list->items[k])) continue;
      return compare(a.list->items[k], b.list->items[k]);
    }
    return a.list->items.size() < b.list->items.size() ? -1 : (a.list->items.size() > b.list->items.size() ? 1 : 0);
  }
  throw Error(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" + type_name(b) + "'");
}

// ---- JSON ----------------------------------------------------------------

static void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else out += char(c);
    }
  }
  out += '"';
}

static void json_dump(std::string& out, const Value& v, const JsonOptions& opt, int depth) {
  bool pretty = opt.indent >= 0 || !opt.indent_str.empty();
  std::string item_sep = opt.has_separators ? opt.item_sep : (pretty ? "," : ", ");
  std::string key_sep = opt.has_separators ? opt.key_sep : ": ";
  auto newline = [&](int d) {
    if (!pretty) return;
    out += '\n';
    for (int k = 0; k < d; ++k) out += opt.indent_str.empty() ? std::string(size_t(opt.indent), ' ') : opt.indent_str;
  };
  switch (v.kind) {
    case ValueKind::kNone: out += "null"; return;
    case ValueKind::kBool: out += v.b ? "true" : "false"; return;
    case ValueKind::kInt: out += std::to_string(v.i); return;
    case ValueKind::kFloat:
      if (std::isnan(v.f)) out += "NaN";
      else if (std::isinf(v.f)) out += v.f < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(v.f);
      return;
    case ValueKind::kString: json_string(out, v.s); return;
    case ValueKind::kList: {
      if (!v.list->lazy_kind.empty()) throw Error("Object of type " + v.list->lazy_kind + " is not JSON serializable");
      if (v.list->items.empty()) { out += "[]"; return; }
      out += '[';
      for (size_t k = 0; k < v.list->items.size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_dump(out, v.list->items[k], opt, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case ValueKind::kDict: {
      if (v.dict->is_namespace) throw Error("Object of type Namespace is not JSON serializable");
      if (v.dict->items.empty()) { out += "{}"; return; }
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* x, auto* y) { return x->first < y->first; });
      out += '{';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += item_sep;
        newline(depth + 1);
        json_string(out, items[k]->first);
        out += key_sep;
        json_dump(out, items[k]->second, opt, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: throw Error(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, const JsonOptions& opt) {
  std::string out;
  json_dump(out, v, opt, 0);
  return out;
}

namespace {

struct JsonParser {
  const std::string& t;
  size_t p = 0;
  bool lossy_big_ints = false;

  [[noreturn]] void fail(const char* what) { throw Error(std::string("JSON: ") + what + " at offset " + std::to_string(p)); }
  void ws() { while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p; }
  bool lit(const char* s) {
    size_t n = std::char_traits<char>::length(s);
    if (t.compare(p, n, s) == 0) { p += n; return true; }
    return false;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) { out += char(0xC0 | (cp >> 6)); out += char(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) { out += char(0xE0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F)); }
    else { out += char(0xF0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3F)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F)); }
  }
  uint32_t hex4() {
    if (p + 4 > t.size()) fail("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t[p++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else fail("bad \\u escape");
    }
    return v;
  }
  std::string str() {
    ++p;  // opening quote
    std::string out;
    while (true) {
      if (p >= t.size()) fail("unterminated string");
      char c = t[p++];
      if (c == '"') return out;
      if (c != '\\') { out += c; continue; }
      if (p >= t.size()) fail("unterminated escape");
      char e = t[p++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && t.compare(p, 2, "\\u") == 0) {
            p += 2;
            uint32_t lo = hex4();
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Value value() {
    ws();
    if (p >= t.size()) fail("unexpected end");
    char c = t[p];
    if (c == '{') {
      ++p;
      Value d = Value::new_dict();
      ws();
      if (p < t.size() && t[p] == '}') { ++p; return d; }
      while (true) {
        ws();
        if (p >= t.size() || t[p] != '"') fail("expected key");
        std::string k = str();
        ws();
        if (p >= t.size() || t[p++] != ':') fail("expected ':'");
        d.dict->set(k, value());
        ws();
        if (p < t.size() && t[p] == ',') { ++p; continue; }
        if (p < t.size() && t[p] == '}') { ++p; return d; }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++p;
      Value l = Value::new_list();
      ws();
      if (p < t.size() && t[p] == ']') { ++p; return l; }
      while (true) {
        l.list->items.push_back(value());
        ws();
        if (p < t.size() && t[p] == ',') { ++p; continue; }
        if (p < t.size() && t[p] == ']') { ++p; return l; }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') return Value::string(str());
    if (lit("true")) return Value::boolean(true);
    if (lit("false")) return Value::boolean(false);
    if (lit("null")) return Value::none();
    size_t start = p;
    bool is_float = false;
    if (t[p] == '-') ++p;
    while (p < t.size() && (std::isdigit((unsigned char)t[p]) || t[p] == '.' || t[p] == 'e' || t[p] == 'E' ||
                            ((t[p] == '+' || t[p] == '-') && (t[p - 1] == 'e' || t[p - 1] == 'E')))) {
      if (!std::isdigit((unsigned char)t[p])) is_float = true;
      ++p;
    }
    if (p == start) fail("unexpected character");
    std::string num = t.substr(start, p - start);
    if (!is_float) {
      int64_t v = 0;
      auto r = std::from_chars(num.data(), num.data() + num.size(), v);
      if (r.ec == std::errc()) return Value::integer(v);
      if (!lossy_big_ints) throw Refusal("JSON integer " + num + " does not fit in 64 bits (Python would keep it exact)");
    }
    return Value::number(std::strtod(num.c_str(), nullptr));
  }
};

}  // namespace

Value parse_json(const std::string& text, bool lossy_big_ints) {
  JsonParser jp{text, 0, lossy_big_ints};
  Value v = jp.value();
  jp.ws();
  if (jp.p != text.size()) jp.fail("trailing characters");
  return v;
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t k = 0; k < s.size();) {
    unsigned char c = (unsigned char)s[k];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (k + n > s.size()) n = 1;
    out.push_back(s.substr(k, n));
    k += n;
  }
  return out;
}

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

}  // namespace strix::jinja
