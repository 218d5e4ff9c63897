// Attribute/item access, iteration and the Python str/list/dict methods a
// sandboxed jinja2 lets templates call.
#include <utf8proc.h>

#include <algorithm>

#include "chat/jinja_eval.h"
#include "core/error.h"

namespace strix::jinja {

const Value* find_arg(const CallArgs& a, size_t idx, const char* name) {
  if (idx < a.pos.size()) return &a.pos[idx];
  for (const auto& kv : a.kw)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

Value arg_or(const CallArgs& a, size_t idx, const char* name, Value def) {
  const Value* v = find_arg(a, idx, name);
  return v ? *v : def;
}

namespace {

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::string py_strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<std::string> cs = utf8_chars(s);
  std::vector<std::string> set;
  bool ws = !chars || chars->is_none();
  if (!ws) {
    if (!chars->is_string()) throw TemplateError("strip arg must be None or str");
    set = utf8_chars(chars->s);
  }
  auto strip_it = [&](const std::string& c) {
    if (ws) return is_py_whitespace(c);
    return std::find(set.begin(), set.end(), c) != set.end();
  };
  size_t b = 0, e = cs.size();
  if (left) while (b < e && strip_it(cs[b])) ++b;
  if (right) while (e > b && strip_it(cs[e - 1])) --e;
  std::string out;
  for (size_t k = b; k < e; ++k) out += cs[k];
  return out;
}

// Case mapping per code point through utf8proc (Python uses full Unicode
// mappings; the one-to-many ones such as 'ß'.upper() == 'SS' are not done).
namespace {

uint32_t decode(const std::string& c) {
  unsigned char b0 = (unsigned char)c[0];
  if (c.size() == 1) return b0;
  uint32_t cp = c.size() == 2 ? (b0 & 0x1F) : c.size() == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < c.size(); ++k) cp = (cp << 6) | ((unsigned char)c[k] & 0x3F);
  return cp;
}

std::string encode(uint32_t cp) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(utf8proc_int32_t(cp), buf);
  return std::string(reinterpret_cast<const char*>(buf), size_t(n));
}

template <typename F>
std::string map_chars(const std::string& s, F f) {
  std::string out;
  for (const auto& c : utf8_chars(s)) out += encode(uint32_t(f(utf8proc_int32_t(decode(c)))));
  return out;
}

bool is_cased_letter(uint32_t cp) {
  auto cat = utf8proc_category(utf8proc_int32_t(cp));
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

}  // namespace

bool is_py_whitespace(const std::string& c) {
  uint32_t cp = decode(c);
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_word_char(const std::string& c) {
  if (c == "_") return true;
  auto cat = utf8proc_category(utf8proc_int32_t(decode(c)));
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) || (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

std::string py_lower(const std::string& s) { return map_chars(s, utf8proc_tolower); }
std::string py_upper(const std::string& s) { return map_chars(s, utf8proc_toupper); }
std::string py_capitalize(const std::string& s) {
  std::string out;
  bool first = true;
  for (const auto& c : utf8_chars(s)) {
    auto cp = utf8proc_int32_t(decode(c));
    out += encode(uint32_t(first ? utf8proc_totitle(cp) : utf8proc_tolower(cp)));
    first = false;
  }
  return out;
}
std::string py_title(const std::string& s) {  // str.title(): title-case after any uncased character
  std::string out;
  bool prev_cased = false;
  for (const auto& c : utf8_chars(s)) {
    auto cp = utf8proc_int32_t(decode(c));
    bool cased = is_cased_letter(uint32_t(cp));
    out += encode(uint32_t(cased ? (prev_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp)) : cp));
    prev_cased = cased;
  }
  return out;
}

Value py_split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {
    // whitespace runs; leading/trailing whitespace ignored
    std::vector<std::pair<size_t, size_t>> words;
    size_t k = 0;
    while (k < s.size()) {
      while (k < s.size() && is_py_space(s[k])) ++k;
      if (k >= s.size()) break;
      size_t b = k;
      while (k < s.size() && !is_py_space(s[k])) ++k;
      words.emplace_back(b, k);
    }
    if (maxsplit < 0 || size_t(maxsplit) >= words.size()) {
      for (auto& w : words) parts.push_back(s.substr(w.first, w.second - w.first));
    } else if (!from_right) {
      for (size_t w = 0; w < size_t(maxsplit); ++w) parts.push_back(s.substr(words[w].first, words[w].second - words[w].first));
      parts.push_back(s.substr(words[size_t(maxsplit)].first));
    } else {
      size_t keep = words.size() - size_t(maxsplit);
      parts.push_back(s.substr(0, words[keep - 1].second));
      for (size_t w = keep; w < words.size(); ++w) parts.push_back(s.substr(words[w].first, words[w].second - words[w].first));
    }
  } else {
    if (!sep->is_string()) throw TemplateError("must be str or None");
    const std::string& d = sep->s;
    if (d.empty()) throw TemplateError("empty separator");
    std::vector<size_t> hits;
    for (size_t k = s.find(d); k != std::string::npos; k = s.find(d, k + d.size())) hits.push_back(k);
    if (maxsplit >= 0 && size_t(maxsplit) < hits.size()) {
      if (from_right) hits.erase(hits.begin(), hits.end() - maxsplit);
      else hits.resize(size_t(maxsplit));
    }
    size_t b = 0;
    for (size_t h : hits) { parts.push_back(s.substr(b, h - b)); b = h + d.size(); }
    parts.push_back(s.substr(b));
  }
  std::vector<Value> out;
  for (auto& p : parts) out.push_back(Value::string(p));
  return Value::new_list(std::move(out));
}

std::string py_replace(const std::string& s, const std::string& a, const std::string& b, int64_t count) {
  std::string out;
  if (a.empty()) {  // Python inserts b between every character
    std::vector<std::string> cs = utf8_chars(s);
    int64_t n = 0;
    for (size_t k = 0; k <= cs.size(); ++k) {
      if (count < 0 || n < count) { out += b; ++n; }
      if (k < cs.size()) out += cs[k];
    }
    return out;
  }
  size_t k = 0;
  int64_t n = 0;
  while (true) {
    size_t h = s.find(a, k);
    if (h == std::string::npos || (count >= 0 && n >= count)) break;
    out += s.substr(k, h - k) + b;
    k = h + a.size();
    ++n;
  }
  return out + s.substr(k);
}

std::vector<Value> iterate(const Value& v, int line) {
  switch (v.kind) {
    case ValueKind::kList: {
      if (v.list->lazy_kind == "generator") {
        if (!v.list->deferred_error.empty()) throw TemplateError(v.list->deferred_error);
        if (v.list->consumed) return {};
        v.list->consumed = true;
      }
      return v.list->items;
    }
    case ValueKind::kDict: {
      if (v.dict->is_namespace) raise("'Namespace' object is not iterable", line);
      std::vector<Value> keys;
      for (const auto& kv : v.dict->items) keys.push_back(Value::string(kv.first));
      return keys;
    }
    case ValueKind::kString: {
      std::vector<Value> out;
      for (auto& c : utf8_chars(v.s)) out.push_back(Value::string(c));
      return out;
    }
    case ValueKind::kUndefined: return {};
    default: raise(std::string("'") + type_name(v) + "' object is not iterable", line);
  }
}

namespace {

Value str_method(const Value& obj, const std::string& name, int line) {
  std::string s = obj.s;
  auto m = [&](auto fn) { return Value::callable(fn); };
  auto str_arg = [line, name](const CallArgs& a, size_t k) -> std::string {
    if (k >= a.pos.size() || !a.pos[k].is_string()) raise("str." + name + "() expects a string argument", line);
    return a.pos[k].s;
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool l = name != "rstrip", r = name != "lstrip";
    return m([s, l, r](CallArgs& a) { return Value::string(py_strip(s, find_arg(a, 0, "chars"), l, r)); });
  }
  if (name == "upper") return m([s](CallArgs&) { return Value::string(py_upper(s)); });
  if (name == "lower") return m([s](CallArgs&) { return Value::string(py_lower(s)); });
  if (name == "title") return m([s](CallArgs&) { return Value::string(py_title(s)); });
  if (name == "capitalize") return m([s](CallArgs&) { return Value::string(py_capitalize(s)); });
  if (name == "split" || name == "rsplit") {
    bool right = name == "rsplit";
    return m([s, right](CallArgs& a) {
      Value ms = arg_or(a, 1, "maxsplit", Value::integer(-1));
      return py_split(s, find_arg(a, 0, "sep"), ms.as_int(), right);
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool start = name == "startswith";
    return m([s, start, line](CallArgs& a) {
      if (a.pos.empty()) raise("startswith/endswith needs an argument", line);
      std::vector<Value> cands = a.pos[0].is_list() ? a.pos[0].list->items : std::vector<Value>{a.pos[0]};
      for (const auto& c : cands) {
        if (!c.is_string()) raise("startswith/endswith argument must be str or a tuple of str", line);
        if (c.s.size() <= s.size() && (start ? s.compare(0, c.s.size(), c.s) == 0 : s.compare(s.size() - c.s.size(), c.s.size(), c.s) == 0))
          return Value::boolean(true);
      }
      return Value::boolean(false);
    });
  }
  if (name == "replace") {
    return m([s, str_arg](CallArgs& a) {
      return Value::string(py_replace(s, str_arg(a, 0), str_arg(a, 1), arg_or(a, 2, "count", Value::integer(-1)).as_int()));
    });
  }
  if (name == "find" || name == "rfind" || name == "count" || name == "index") {
    return m([s, name, str_arg, line](CallArgs& a) {
      if (a.pos.size() > 1) throw Refusal("chat template calls str." + name + " with start/end (line " + std::to_string(line) + "), which Strix does not implement");
      std::string needle = str_arg(a, 0);
      if (name == "count") {
        if (needle.empty()) return Value::integer(int64_t(utf8_length(s)) + 1);
        int64_t n = 0;
        for (size_t k = s.find(needle); k != std::string::npos; k = s.find(needle, k + needle.size())) ++n;
        return Value::integer(n);
      }
      size_t h = name == "rfind" ? s.rfind(needle) : s.find(needle);
      if (h == std::string::npos) {
        if (name == "index") raise("substring not found", line);
        return Value::integer(-1);
      }
      return Value::integer(int64_t(utf8_length(s.substr(0, h))));
    });
  }
  if (name == "join") {
    return m([s, line](CallArgs& a) {
      if (a.pos.empty()) raise("join needs an argument", line);
      std::string out;
      bool first = true;
      for (const auto& v : iterate(a.pos[0], line)) {
        if (!v.is_string()) raise("sequence item: expected str instance, " + std::string(type_name(v)) + " found", line);
        if (!first) out += s;
        first = false;
        out += v.s;
      }
      return Value::string(out);
    });
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum" || name == "islower" || name == "isupper") {
    return m([s, name](CallArgs&) {
      if (s.empty()) return Value::boolean(false);
      bool ok = true, cased = false;
      for (unsigned char c : s) {
        if (name == "isdigit") ok &= c >= '0' && c <= '9';
        else if (name == "isalpha") ok &= is_alpha(c);
        else if (name == "isspace") ok &= is_py_space(char(c));
        else if (name == "isalnum") ok &= is_alpha(c) || (c >= '0' && c <= '9');
        else if (name == "islower") { ok &= !(c >= 'A' && c <= 'Z'); cased |= c >= 'a' && c <= 'z'; }
        else { ok &= !(c >= 'a' && c <= 'z'); cased |= c >= 'A' && c <= 'Z'; }
      }
      if (name == "islower" || name == "isupper") ok &= cased;
      return Value::boolean(ok);
    });
  }
  // Python str methods Strix does not implement: calling one is refused by name.
  static const char* const kUnimplemented[] = {
      "casefold", "center", "encode", "expandtabs", "format", "format_map", "isascii", "isdecimal", "isidentifier",
      "isnumeric", "isprintable", "istitle", "ljust", "maketrans", "partition", "removeprefix", "removesuffix",
      "rindex", "rjust", "rpartition", "splitlines", "swapcase", "translate", "zfill"};
  for (const char* u : kUnimplemented) {
    if (name == u) {
      return Value::callable([name, line](CallArgs&) -> Value {
        throw Refusal("chat template calls str." + name + " (line " + std::to_string(line) +
                      "), which Strix's Jinja interpreter does not implement");
      });
    }
  }
  return Value::undefined(name);
}

bool is_mutating(const std::string& name) {
  static const char* const kUnsafe[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
                                        "update", "setdefault", "popitem", "__setitem__", "__delitem__"};
  for (const char* u : kUnsafe)
    if (name == u) return true;
  return false;
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) raise("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined (attribute '" + name + "')", line);
  if (!name.empty() && name[0] == '_') return Value::undefined(name);  // sandbox: private attributes are unsafe
  if (obj.is_string()) return str_method(obj, name, line);
  if (obj.is_dict()) {
    const auto d = obj.dict;
    if (!d->is_namespace) {
      if (name == "items" || name == "keys" || name == "values") {
        return Value::callable([d, name](CallArgs&) {
          std::vector<Value> out;
          for (const auto& kv : d->items) {
            if (name == "items") out.push_back(Value::new_list({Value::string(kv.first), kv.second}, true));
            else out.push_back(name == "keys" ? Value::string(kv.first) : kv.second);
          }
          return Value::new_lazy(std::move(out), name == "items" ? "dict_items" : name == "keys" ? "dict_keys" : "dict_values");
        });
      }
      if (name == "get") {
        return Value::callable([d, line](CallArgs& a) {
          if (a.pos.empty()) raise("get expected at least 1 argument", line);
          const Value* v = a.pos[0].is_string() ? d->find(a.pos[0].s) : nullptr;
          return v ? *v : (a.pos.size() > 1 ? a.pos[1] : Value::none());
        });
      }
      if (name == "copy") return Value::callable([d](CallArgs&) { Value c = Value::new_dict(); c.dict->items = d->items; return c; });
      if (is_mutating(name)) {
        return Value::callable([name, line](CallArgs&) -> Value { raise("access to attribute '" + name + "' of 'dict' object is unsafe", line); });
      }
    }
    const Value* v = d->find(name);
    return v ? *v : Value::undefined(name);
  }
  if (obj.is_list()) {
    const auto l = obj.list;
    if (name == "index" || name == "count") {
      return Value::callable([l, name, line](CallArgs& a) {
        if (a.pos.empty()) raise(name + " expected an argument", line);
        int64_t n = 0;
        for (size_t k = 0; k < l->items.size(); ++k) {
          if (!equals(l->items[k], a.pos[0])) continue;
          if (name == "index") return Value::integer(int64_t(k));
          ++n;
        }
        if (name == "index") raise("value is not in list", line);
        return Value::integer(n);
      });
    }
    if (is_mutating(name)) {
      return Value::callable([name, line](CallArgs&) -> Value { raise("access to attribute '" + name + "' of 'list' object is unsafe", line); });
    }
    return Value::undefined(name);
  }
  return Value::undefined(name);
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) raise("'" + (obj.s.empty() ? std::string("value") : obj.s) + "' is undefined", line);
  if (obj.is_dict()) {
    if (key.is_string()) {
      const Value* v = obj.dict->find(key.s);
      if (v) return *v;
      if (!obj.dict->is_namespace) return get_attr(obj, key.s, line);
    }
    return Value::undefined(key.is_string() ? key.s : to_str(key));
  }
  if ((obj.is_list() || obj.is_string()) && key.is_int()) {
    int64_t n = obj.is_list() ? int64_t(obj.list->items.size()) : int64_t(utf8_length(obj.s));
    int64_t k = key.as_int();
    if (k < 0) k += n;
    if (k < 0 || k >= n) { std::string hint = "["; hint += std::to_string(key.as_int()); hint += "]"; return Value::undefined(hint); }
    if (obj.is_list()) return obj.list->items[size_t(k)];
    return Value::string(utf8_chars(obj.s)[size_t(k)]);
  }
  if (key.is_string()) return get_attr(obj, key.s, line);
  return Value::undefined(to_str(key));
}

}  // namespace strix::jinja
