// Values of the Jinja2 interpreter, with Python semantics.
//
// Chat templates are written against Python objects (dicts from JSON, lists,
// str, int, float, bool, None) and their output is whatever Python's str()
// makes of them, so every value here mimics its Python counterpart: str() and
// repr() formatting, truthiness, ==, ordering and json.dumps as HF calls it.
// Lists, dicts and namespaces are shared by reference (a namespace mutated in a
// loop is seen after it, as in Python).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strix::jinja {

struct Value;

// Arguments of a call: positional then keyword, in source order.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

using NativeFn = std::function<Value(CallArgs&)>;

enum class ValueKind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes repr: (1, 2)
  // Non-empty for Python iterables that are not lists: "generator" (what
  // select/map/unique/batch/reverse/items filters return: always truthy, no
  // len, single use, printing shows an address) or a dict view ("dict_items",
  // "dict_keys", "dict_values"). Items are computed eagerly either way.
  std::string lazy_kind;
  bool consumed = false;       // a generator that was iterated once is empty after
  std::string deferred_error;  // error a generator raises when first iterated
};

// Insertion-ordered string-keyed map (JSON objects and Jinja dict literals).
struct DictData {
  std::vector<std::pair<std::string, Value>> items;
  bool is_namespace = false;  // namespace(): the only object `set ns.x = ...` may write
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

struct Value {
  ValueKind kind = ValueKind::kUndefined;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // string payload, or the name an undefined came from
  std::shared_ptr<ListData> list;
  std::shared_ptr<DictData> dict;
  std::shared_ptr<NativeFn> fn;
  bool safe = false;  // Markup from escape/safe: only matters for `is escaped`

  static Value undefined(std::string hint = "") { Value v; v.s = std::move(hint); return v; }
  static Value none() { Value v; v.kind = ValueKind::kNone; return v; }
  static Value boolean(bool x) { Value v; v.kind = ValueKind::kBool; v.b = x; return v; }
  static Value integer(int64_t x) { Value v; v.kind = ValueKind::kInt; v.i = x; return v; }
  static Value number(double x) { Value v; v.kind = ValueKind::kFloat; v.f = x; return v; }
  static Value string(std::string x) { Value v; v.kind = ValueKind::kString; v.s = std::move(x); return v; }
  static Value new_list(std::vector<Value> items = {}, bool tuple = false);
  static Value new_lazy(std::vector<Value> items, const char* lazy_kind);
  static Value deferred_generator(std::string error);  // raises `error` when iterated
  static Value new_dict();
  static Value callable(NativeFn f);

  bool is_undefined() const { return kind == ValueKind::kUndefined; }
  bool is_none() const { return kind == ValueKind::kNone; }
  bool is_string() const { return kind == ValueKind::kString; }
  bool is_list() const { return kind == ValueKind::kList && list->lazy_kind.empty(); }  // list or tuple
  bool is_lazy() const { return kind == ValueKind::kList && !list->lazy_kind.empty(); }
  bool is_generator() const { return is_lazy() && list->lazy_kind == "generator"; }
  bool is_dict() const { return kind == ValueKind::kDict; }
  bool is_int() const { return kind == ValueKind::kInt || kind == ValueKind::kBool; }  // Python bool is an int
  bool is_number() const { return is_int() || kind == ValueKind::kFloat; }
  double as_double() const { return kind == ValueKind::kFloat ? f : double(as_int()); }
  int64_t as_int() const { return kind == ValueKind::kBool ? int64_t(b) : i; }
};

const char* type_name(const Value& v);  // Python's type name, for error messages
bool truthy(const Value& v);
std::string to_str(const Value& v);   // Python str(); undefined renders as ""
std::string to_repr(const Value& v);  // Python repr()
std::string float_repr(double x);     // Python float repr: 1.0, 0.1, 1e-05, 1e+16
bool equals(const Value& a, const Value& b);
// Python `<` ordering; throws strix::Error on unorderable types. Returns -1/0/1.
int compare(const Value& a, const Value& b);

// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...).
// indent < 0 means None. Throws on undefined/callables (Python's TypeError).
struct JsonOptions {
  int indent = -1;
  std::string indent_str;  // used when indent was given as a string
  bool has_separators = false;
  std::string item_sep, key_sep;
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonOptions& opt);

// Parse JSON text (objects, arrays, strings, numbers, true/false/null) into values.
// Integers beyond 64 bits are refused (Python keeps them exact) unless
// `lossy_big_ints`, which reads them as floats (for config files whose big
// numbers, e.g. model_max_length, never reach a template).
Value parse_json(const std::string& text, bool lossy_big_ints = false);

// UTF-8 helpers: strings are indexed and measured in code points, as in Python.
std::vector<std::string> utf8_chars(const std::string& s);
size_t utf8_length(const std::string& s);

}  // namespace strix::jinja
