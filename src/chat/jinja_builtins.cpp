// Jinja2's builtin filters and tests (jinja2/filters.py, jinja2/tests.py) as
// chat templates use them, plus the globals HF's environment defines.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>

#include "chat/jinja_eval.h"
#include "core/error.h"

namespace strix::jinja {

namespace {

[[noreturn]] void refuse_filter(const std::string& what, int line) {
  throw Refusal("chat template uses " + what + " (line " + std::to_string(line) + "), which Strix's Jinja interpreter does not implement");
}

std::string need_str(const Value& v) { return to_str(v); }  // jinja's soft_str

// attribute="a.b" or "0" lookups of map/sort/selectattr/...
Value attr_path(const Value& v, const Value& attr, int line) {
  if (attr.is_int()) return get_item(v, attr, line);
  Value cur = v;
  std::string path = to_str(attr);
  size_t b = 0;
  while (true) {
    size_t e = path.find('.', b);
    std::string part = path.substr(b, e == std::string::npos ? std::string::npos : e - b);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = get_item(cur, digits ? Value::integer(std::atoll(part.c_str())) : Value::string(part), line);
    if (e == std::string::npos) return cur;
    b = e + 1;
  }
}

// Sort key as jinja's ignore_case: strings lowered unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return (!case_sensitive && v.is_string()) ? Value::string(py_lower(v.s)) : v;
}

void sort_values(std::vector<Value>& items, const std::function<Value(const Value&)>& key, bool reverse, int line) {
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), v);
  try {
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? compare(b.first, a.first) < 0 : compare(a.first, b.first) < 0;
    });
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& e) {
    raise(e.what(), line);
  }
  for (size_t k = 0; k < items.size(); ++k) items[k] = keyed[k].second;
}

CallArgs rest_args(const CallArgs& a, size_t from) {
  CallArgs r;
  for (size_t k = from; k < a.pos.size(); ++k) r.pos.push_back(a.pos[k]);
  r.kw = a.kw;
  return r;
}

Value select_like(const std::string& name, const Value& v, CallArgs& a, int line) {
  bool attr_mode = name == "selectattr" || name == "rejectattr";
  bool keep_if = name == "select" || name == "selectattr";
  size_t off = attr_mode ? 1 : 0;
  if (attr_mode && a.pos.empty()) raise(name + " needs an attribute", line);
  std::vector<Value> out;
  for (const auto& item : iterate(v, line)) {
    Value x = attr_mode ? attr_path(item, a.pos[0], line) : item;
    bool ok;
    if (a.pos.size() <= off) {
      ok = truthy(x);
    } else {
      std::string test = to_str(a.pos[off]);
      CallArgs ta = rest_args(a, off + 1);
      ok = apply_test(test, x, ta, line);
    }
    if (ok == keep_if) out.push_back(item);
  }
  return Value::new_list(std::move(out));
}

Value do_round(const Value& v, CallArgs& a, int line) {
  int64_t prec = arg_or(a, 0, "precision", Value::integer(0)).as_int();
  std::string method = to_str(arg_or(a, 1, "method", Value::string("common")));
  if (!v.is_number()) raise("round needs a number", line);
  double x = v.as_double(), scale = std::pow(10.0, double(prec));
  if (method == "common") {
    if (v.is_int() && prec >= 0) return Value::integer(v.as_int());
    double r = std::nearbyint(x * scale) / scale;  // Python round(): half to even
    return Value::number(r);
  }
  if (method == "ceil") return Value::number(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::number(std::floor(x * scale) / scale);
  raise("method must be common, ceil or floor", line);
}

Value do_indent(const Value& v, CallArgs& a, int line) {
  if (!v.is_string()) raise(std::string("indent needs a string (got '") + type_name(v) + "')", line);  // s += "\n" raises
  Value w = arg_or(a, 0, "width", Value::integer(4));
  bool first = truthy(arg_or(a, 1, "first", Value::boolean(false)));
  bool blank = truthy(arg_or(a, 2, "blank", Value::boolean(false)));
  std::string ind = w.is_string() ? w.s : std::string(size_t(std::max<int64_t>(0, w.as_int())), ' ');
  std::string s = need_str(v) + "\n";
  // str.splitlines on '\n' / '\r\n' / '\r' (other Unicode breaks are rare in templates)
  std::vector<std::string> lines;
  size_t b = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '\n' || s[k] == '\r') {
      lines.push_back(s.substr(b, k - b));
      if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
      b = k + 1;
    }
  }
  if (b < s.size()) lines.push_back(s.substr(b));
  std::string rv;
  if (blank) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) { rv += '\n'; rv += ind; }
      rv += lines[k];
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t k = 1; k < lines.size(); ++k) {
      rv += '\n';
      if (!lines[k].empty()) { rv += ind; rv += lines[k]; }
    }
  }
  if (first) rv.insert(0, ind);
  return Value::string(rv);
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value do_tojson(const Value& v, CallArgs& a, int line) {
  JsonOptions o;
  Value ind = arg_or(a, 1, "indent", Value::none());
  if (ind.is_string()) o.indent_str = ind.s, o.indent = 0;
  else if (ind.is_int()) o.indent = int(ind.as_int());
  else if (!ind.is_none()) raise("tojson indent must be int, str or None", line);
  Value sep = arg_or(a, 2, "separators", Value::none());
  if (sep.is_list() && sep.list->items.size() == 2) {
    o.has_separators = true;
    o.item_sep = to_str(sep.list->items[0]);
    o.key_sep = to_str(sep.list->items[1]);
  }
  o.sort_keys = truthy(arg_or(a, 3, "sort_keys", Value::boolean(false)));
  if (truthy(arg_or(a, 0, "ensure_ascii", Value::boolean(false)))) refuse_filter("tojson(ensure_ascii=true)", line);
  try {
    return Value::string(to_json(v, o));
  } catch (const TemplateError&) {
    throw;
  } catch (const Error& e) {
    raise(e.what(), line);
  }
}


Value filter_impl(const std::string& name, const Value& v, CallArgs& a, int line);

}  // namespace

// Filters that jinja2 writes as generator functions return a generator: its
// body (and any error in it) runs only when iterated. Strix computes the items
// eagerly but keeps the generator's observable behaviour and defers the error.
Value apply_filter(const std::string& name, const Value& v, CallArgs& a, int line) {
  static const char* const kGenerators[] = {"map", "select", "reject", "selectattr", "rejectattr", "unique", "batch", "items"};
  bool gen = false;
  for (const char* g : kGenerators) gen |= name == g;
  if (!gen) {
    Value r = filter_impl(name, v, a, line);
    if (name == "reverse" && r.kind == ValueKind::kList) r.list->lazy_kind = "generator";  // list_reverseiterator
    return r;
  }
  // select/reject/selectattr/rejectattr/map start with `if value:`: a falsy
  // input is an empty generator, whatever its type.
  if (name != "unique" && name != "batch" && name != "items" && !truthy(v)) return Value::new_lazy({}, "generator");
  Value r;
  try {
    r = filter_impl(name, v, a, line);
  } catch (const TemplateError& e) {
    return Value::deferred_generator(e.what());
  }
  Value out = Value::new_lazy(r.list->items, "generator");
  return out;
}

namespace {

Value filter_impl(const std::string& name, const Value& v, CallArgs& a, int line) {
  if (name == "tojson") return do_tojson(v, a, line);
  if (name == "safe") { Value r = Value::string(to_str(v)); r.safe = true; return r; }
  if (name == "escape" || name == "e" || name == "forceescape") {
    if (v.safe && name != "forceescape") return v;
    Value r = Value::string(html_escape(to_str(v)));
    r.safe = true;
    return r;
  }
  if (name == "string") return v.is_string() ? v : Value::string(to_str(v));
  if (name == "trim") return Value::string(py_strip(need_str(v), find_arg(a, 0, "chars"), true, true));
  if (name == "upper") return Value::string(py_upper(need_str(v)));
  if (name == "lower") return Value::string(py_lower(need_str(v)));
  if (name == "capitalize") return Value::string(py_capitalize(need_str(v)));
  if (name == "title") {
    // jinja's do_title: capitalize each chunk split on [-\s(\{\[<]+
    std::string out, word;
    auto flush = [&]() {
      if (word.empty()) return;
      std::vector<std::string> cs = utf8_chars(word);
      out += py_upper(cs[0]) + py_lower(word.substr(cs[0].size()));
      word.clear();
    };
    for (const auto& c : utf8_chars(need_str(v))) {
      if (c == "-" || c == "(" || c == "{" || c == "[" || c == "<" || is_py_whitespace(c)) {
        flush();
        out += c;
      } else {
        word += c;
      }
    }
    flush();
    return Value::string(out);
  }
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::integer(int64_t(utf8_length(v.s)));
    if (v.is_list() || (v.is_lazy() && !v.is_generator())) return Value::integer(int64_t(v.list->items.size()));
    if (v.is_dict() && !v.dict->is_namespace) return Value::integer(int64_t(v.dict->items.size()));
    if (v.is_undefined()) return Value::integer(0);
    raise(std::string("object of type '") + type_name(v) + "' has no len()", line);
  }
  if (name == "default" || name == "d") {
    Value def = arg_or(a, 0, "default_value", Value::string(""));
    bool boolean = truthy(arg_or(a, 1, "boolean", Value::boolean(false)));
    if (v.is_undefined() || (boolean && !truthy(v))) return def;
    return v;
  }
  if (name == "join") {
    std::string sep = to_str(arg_or(a, 0, "d", Value::string("")));
    const Value* attr = find_arg(a, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v, line)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attr ? attr_path(item, *attr, line) : item);
    }
    return Value::string(out);
  }
  if (name == "first" || name == "last") {
    if (name == "last" && v.is_generator()) raise("'generator' object is not reversible", line);
    std::vector<Value> items = iterate(v, line);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::new_list(iterate(v, line));
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> cs = utf8_chars(v.s);
      std::string r;
      for (size_t k = cs.size(); k-- > 0;) r += cs[k];
      return Value::string(r);
    }
    std::vector<Value> items = iterate(v, line);
    std::reverse(items.begin(), items.end());
    return Value::new_list(std::move(items));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::new_list();
    if (!v.is_dict()) raise("can only get item pairs from a mapping", line);
    CallArgs none;
    return Value::new_list((*get_attr(v, "items", line).fn)(none).list->items);
  }
  if (name == "dictsort") {
    if (!v.is_dict()) raise("dictsort needs a mapping", line);
    bool cs = truthy(arg_or(a, 0, "case_sensitive", Value::boolean(false)));
    std::string by = to_str(arg_or(a, 1, "by", Value::string("key")));
    bool rev = truthy(arg_or(a, 2, "reverse", Value::boolean(false)));
    CallArgs none;
    std::vector<Value> items = (*get_attr(v, "items", line).fn)(none).list->items;
    size_t pos = by == "value" ? 1 : 0;
    sort_values(items, [&](const Value& it) { return sort_key(it.list->items[pos], cs); }, rev, line);
    return Value::new_list(std::move(items));
  }
  if (name == "sort") {
    bool rev = truthy(arg_or(a, 0, "reverse", Value::boolean(false)));
    bool cs = truthy(arg_or(a, 1, "case_sensitive", Value::boolean(false)));
    const Value* attr = find_arg(a, 2, "attribute");
    std::vector<Value> items = iterate(v, line);
    sort_values(items, [&](const Value& it) { return sort_key(attr ? attr_path(it, *attr, line) : it, cs); }, rev, line);
    return Value::new_list(std::move(items));
  }
  if (name == "unique") {
    bool cs = truthy(arg_or(a, 0, "case_sensitive", Value::boolean(false)));
    const Value* attr = find_arg(a, 1, "attribute");
    std::vector<Value> out, seen;
    for (const auto& it : iterate(v, line)) {
      Value k = sort_key(attr ? attr_path(it, *attr, line) : it, cs);
      bool dup = false;
      for (const auto& s : seen) dup |= equals(s, k);
      if (!dup) { seen.push_back(k); out.push_back(it); }
    }
    return Value::new_list(std::move(out));
  }
  if (name == "min" || name == "max") {
    bool cs = truthy(arg_or(a, 0, "case_sensitive", Value::boolean(false)));
    const Value* attr = find_arg(a, 1, "attribute");
    std::vector<Value> items = iterate(v, line);
    if (items.empty()) return Value::undefined(name);
    sort_values(items, [&](const Value& it) { return sort_key(attr ? attr_path(it, *attr, line) : it, cs); }, false, line);
    return name == "min" ? items.front() : items.back();
  }
  if (name == "sum") {
    const Value* attr = find_arg(a, 0, "attribute");
    Value total = arg_or(a, 1, "start", Value::integer(0));
    for (const auto& it : iterate(v, line)) {
      Value x = attr ? attr_path(it, *attr, line) : it;
      if (!x.is_number() || !total.is_number()) raise("sum of non-numbers", line);
      total = (x.kind == ValueKind::kFloat || total.kind == ValueKind::kFloat) ? Value::number(total.as_double() + x.as_double())
                                                                                : Value::integer(total.as_int() + x.as_int());
    }
    return total;
  }
  if (name == "map") {
    std::vector<Value> out;
    const Value* attr = nullptr;
    for (const auto& kv : a.kw)
      if (kv.first == "attribute") attr = &kv.second;
    if (attr) {
      Value def = Value::undefined();
      for (const auto& kv : a.kw)
        if (kv.first == "default") def = kv.second;
      for (const auto& it : iterate(v, line)) {
        Value x = attr_path(it, *attr, line);
        out.push_back(x.is_undefined() && !def.is_undefined() ? def : x);
      }
    } else {
      if (a.pos.empty()) raise("map requires a filter argument", line);
      std::string f = to_str(a.pos[0]);
      for (const auto& it : iterate(v, line)) {
        CallArgs fa = rest_args(a, 1);
        out.push_back(apply_filter(f, it, fa, line));
      }
    }
    return Value::new_list(std::move(out));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") return select_like(name, v, a, line);
  if ((name == "int" || name == "float") && v.is_undefined()) raise("'" + v.s + "' is undefined", line);  // int(Undefined) raises
  if (name == "int") {
    Value def = arg_or(a, 0, "default", Value::integer(0));
    int64_t base = arg_or(a, 1, "base", Value::integer(10)).as_int();
    if (v.is_int()) return Value::integer(v.as_int());
    if (v.kind == ValueKind::kFloat) return Value::integer(int64_t(v.f));
    if (v.is_string()) {
      std::string s = py_strip(v.s, nullptr, true, true);
      char* end = nullptr;
      long long r = std::strtoll(s.c_str(), &end, int(base));
      if (!s.empty() && end && *end == '\0') return Value::integer(r);
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0' && base == 10) return Value::integer(int64_t(d));
    }
    return def;
  }
  if (name == "float") {
    Value def = arg_or(a, 0, "default", Value::number(0.0));
    if (v.is_number()) return Value::number(v.as_double());
    if (v.is_string()) {
      std::string s = py_strip(v.s, nullptr, true, true);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (!s.empty() && end && *end == '\0') return Value::number(d);
    }
    return def;
  }
  if (name == "abs") {
    if (v.kind == ValueKind::kFloat) return Value::number(std::fabs(v.f));
    if (v.is_int()) return Value::integer(std::llabs(v.as_int()));
    raise(std::string("bad operand type for abs(): '") + type_name(v) + "'", line);
  }
  if (name == "round") return do_round(v, a, line);
  if (name == "indent") return do_indent(v, a, line);
  if (name == "replace") {
    if (a.pos.size() < 2) raise("replace needs two arguments", line);
    return Value::string(py_replace(need_str(v), to_str(a.pos[0]), to_str(a.pos[1]), arg_or(a, 2, "count", Value::integer(-1)).as_int()));
  }
  if (name == "wordcount") {
    // len(re.findall(r"\w+", str(value))): runs of letters, digits and '_'
    int64_t words = 0;
    bool in_word = false;
    for (const auto& c : utf8_chars(need_str(v))) {
      bool w = is_word_char(c);
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  if (name == "batch") {
    int64_t n = arg_or(a, 0, "linecount", Value::integer(1)).as_int();
    const Value* fill = find_arg(a, 1, "fill_with");
    if (n <= 0) raise("batch size must be positive", line);
    std::vector<Value> out, tmp;
    for (const auto& it : iterate(v, line)) {
      if (int64_t(tmp.size()) == n) { out.push_back(Value::new_list(tmp)); tmp.clear(); }
      tmp.push_back(it);
    }
    if (!tmp.empty()) {
      if (fill && !fill->is_none()) while (int64_t(tmp.size()) < n) tmp.push_back(*fill);
      out.push_back(Value::new_list(tmp));
    }
    return Value::new_list(std::move(out));
  }
  if (name == "center" || name == "truncate" || name == "wordwrap" || name == "format" || name == "striptags" ||
      name == "urlize" || name == "urlencode" || name == "xmlattr" || name == "filesizeformat" || name == "pprint" ||
      name == "groupby" || name == "slice" || name == "random" || name == "attr") {
    refuse_filter("the '" + name + "' filter", line);
  }
  raise("no filter named '" + name + "'", line);
}

}  // namespace

bool has_filter(const std::string& name) {
  static const char* const kFilters[] = {
      "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
      "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join", "last",
      "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace", "reverse",
      "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title", "tojson", "trim",
      "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};
  for (const char* f : kFilters)
    if (name == f) return true;
  return false;
}

bool has_test(const std::string& name) {
  static const char* const kTests[] = {"defined", "undefined", "none", "boolean", "false", "true", "integer", "float",
                                       "number", "string", "mapping", "iterable", "sequence", "callable", "even", "odd",
                                       "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<", "gt",
                                       "greaterthan", ">", "le", "<=", "ge", ">=", "in", "lower", "upper", "sameas",
                                       "escaped", "filter", "test"};
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
}

bool apply_test(const std::string& name, const Value& v, CallArgs& a, int line) {
  auto arg0 = [&]() -> const Value& {
    if (a.pos.empty()) raise("test '" + name + "' needs an argument", line);
    return a.pos[0];
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == ValueKind::kBool;
  if (name == "false") return v.kind == ValueKind::kBool && !v.b;
  if (name == "true") return v.kind == ValueKind::kBool && v.b;
  if (name == "integer") return v.kind == ValueKind::kInt;
  if (name == "float") return v.kind == ValueKind::kFloat;
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.dict->is_namespace;
  if (name == "iterable") return v.is_string() || v.kind == ValueKind::kList || (v.is_dict() && !v.dict->is_namespace) || v.is_undefined();
  // len() and __getitem__: Undefined has both; generators and dict views lack __getitem__
  if (name == "sequence") return v.is_string() || v.is_list() || (v.is_dict() && !v.dict->is_namespace) || v.is_undefined();
  if (name == "callable") return v.kind == ValueKind::kCallable || v.is_undefined();  // jinja2's Undefined defines __call__
  if (name == "even" || name == "odd" || name == "divisibleby") {
    // value % n (== 0 / == 1) with Python's floored modulo, numbers only
    Value n = name == "divisibleby" ? arg0() : Value::integer(2);
    if (!v.is_number() || !n.is_number()) raise(std::string("unsupported operand type(s) for %: '") + type_name(v) + "' and '" + type_name(n) + "'", line);
    if (n.as_double() == 0) raise("integer division or modulo by zero", line);
    double r;
    if (v.kind == ValueKind::kFloat || n.kind == ValueKind::kFloat) {
      double x = v.as_double(), y = n.as_double();
      r = x - std::floor(x / y) * y;
    } else {
      int64_t m = v.as_int() % n.as_int();
      if (m != 0 && ((m < 0) != (n.as_int() < 0))) m += n.as_int();
      r = double(m);
    }
    return name == "odd" ? r == 1 : r == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, arg0());
  if (name == "ne" || name == "!=") return !equals(v, arg0());
  if (name == "lt" || name == "lessthan" || name == "<" || name == "gt" || name == "greaterthan" || name == ">" ||
      name == "le" || name == "<=" || name == "ge" || name == ">=") {
    int c;
    try { c = compare(v, arg0()); } catch (const TemplateError&) { throw; } catch (const Error& e) { raise(e.what(), line); }
    if (name == "lt" || name == "lessthan" || name == "<") return c < 0;
    if (name == "gt" || name == "greaterthan" || name == ">") return c > 0;
    if (name == "le" || name == "<=") return c <= 0;
    return c >= 0;
  }
  if (name == "in") {
    const Value& c = arg0();
    if (c.is_string()) return v.is_string() && c.s.find(v.s) != std::string::npos;
    if (c.kind == ValueKind::kList) { for (const auto& x : iterate(c, line)) if (equals(x, v)) return true; return false; }
    if (c.is_dict()) return v.is_string() && c.dict->find(v.s);
    raise("argument is not a container", line);
  }
  if (name == "lower" || name == "upper") {
    // str(value).islower() / .isupper(): some cased character, none of the other case
    std::string s = to_str(v);
    bool lower = py_lower(s) == s, upper = py_upper(s) == s;
    bool cased = !(lower && upper);
    return cased && (name == "lower" ? lower : upper);
  }
  if (name == "sameas") {
    const Value& o = arg0();
    if (v.kind != o.kind) return false;
    if (v.kind == ValueKind::kList) return v.list == o.list;
    if (v.is_dict()) return v.dict == o.dict;
    return equals(v, o) && !v.is_string();  // None/True/False/small ints are singletons in CPython
  }
  if (name == "escaped") return v.safe;
  if (name == "filter" || name == "test") refuse_filter("the '" + name + "' test", line);
  raise("no test named '" + name + "'", line);
}

Value make_globals_fn(const std::string& name, const RenderOptions& opt) {
  if (name == "range") {
    return Value::callable([](CallArgs& a) {
      int64_t start = 0, stop, step = 1;
      if (a.pos.size() == 1) stop = a.pos[0].as_int();
      else if (a.pos.size() >= 2) { start = a.pos[0].as_int(); stop = a.pos[1].as_int(); if (a.pos.size() > 2) step = a.pos[2].as_int(); }
      else throw TemplateError("range expected at least 1 argument");
      if (step == 0) throw TemplateError("range() arg 3 must not be zero");
      std::vector<Value> out;
      for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
        out.push_back(Value::integer(k));
        if (out.size() > 100000) throw TemplateError("range too big, maximum size for range is 100000");
      }
      return Value::new_list(std::move(out));
    });
  }
  if (name == "namespace" || name == "dict") {
    bool ns = name == "namespace";
    return Value::callable([ns](CallArgs& a) {
      Value d = Value::new_dict();
      d.dict->is_namespace = ns;
      for (const auto& p : a.pos) {
        if (!p.is_dict()) throw TemplateError("namespace/dict positional argument must be a mapping");
        for (const auto& kv : p.dict->items) d.dict->set(kv.first, kv.second);
      }
      for (const auto& kv : a.kw) d.dict->set(kv.first, kv.second);
      return d;
    });
  }
  if (name == "raise_exception") {
    return Value::callable([](CallArgs& a) -> Value {
      throw TemplateError(a.pos.empty() ? std::string("raise_exception") : to_str(a.pos[0]));
    });
  }
  if (name == "strftime_now") {
    std::string fixed = opt.fixed_date;
    return Value::callable([fixed](CallArgs& a) -> Value {
      std::string fmt = a.pos.empty() ? std::string() : to_str(a.pos[0]);
      std::tm tm{};
      if (!fixed.empty()) {
        int y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0;
        if (std::sscanf(fixed.c_str(), "%d-%d-%d%*c%d:%d:%d", &y, &mo, &d, &h, &mi, &s) < 3)
          throw Error("STRIX_FIXED_DATE must look like YYYY-MM-DD or YYYY-MM-DD HH:MM:SS");
        tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
        std::time_t t = timegm(&tm);  // normalises and fills wday/yday
        gmtime_r(&t, &tm);
      } else {
        std::time_t t = std::time(nullptr);
        localtime_r(&t, &tm);
      }
      char buf[512];
      size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
      return Value::string(std::string(buf, n));
    });
  }
  if (name == "cycler" || name == "joiner" || name == "lipsum") {
    return Value::callable([name](CallArgs&) -> Value {
      throw Refusal("chat template calls the global " + name + "(), which Strix's Jinja interpreter does not implement");
    });
  }
  throw Error("unknown global " + name);
}

}  // namespace strix::jinja
