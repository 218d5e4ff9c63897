// The Jinja2 evaluator: renders a parsed template over a context of values.
//
// Environment = what transformers' _compile_jinja_template sets up:
// ImmutableSandboxedEnvironment(trim_blocks, lstrip_blocks, loopcontrols),
// tojson as json.dumps(ensure_ascii=False, ...), raise_exception and
// strftime_now globals. Mutating methods (list.append, dict.update, ...) are
// refused by the sandbox, so they raise here too.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "core/error.h"
#include "chat/jinja_value.h"

namespace strix::jinja {

// A template raised (raise_exception, undefined access, type errors): the
// same situations in which Python's jinja2 raises.
class TemplateError : public Error {
 public:
  explicit TemplateError(const std::string& message) : Error(message) {}
};

// One variable scope; loops and macro calls push a new one whose parent is the
// enclosing (loop) or defining (macro closure) scope.
struct Frame {
  std::map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
  const Value* lookup(const std::string& name) const;
};

struct RenderOptions {
  // strftime_now's clock: "YYYY-MM-DD" or "YYYY-MM-DD HH:MM:SS"; empty = real local time.
  std::string fixed_date;
};

std::string render(const Body& tmpl, const std::vector<std::pair<std::string, Value>>& context,
                   const RenderOptions& opt = {});

// ---- builtins (jinja_builtins.cpp, jinja_methods.cpp) ----------------------

[[noreturn]] void raise(const std::string& message, int line);
// Argument `idx`/`name` of a call, or `def` when absent.
const Value* find_arg(const CallArgs& a, size_t idx, const char* name);
Value arg_or(const CallArgs& a, size_t idx, const char* name, Value def);

Value apply_filter(const std::string& name, const Value& v, CallArgs& args, int line);
bool apply_test(const std::string& name, const Value& v, CallArgs& args, int line);
bool has_test(const std::string& name);
bool has_filter(const std::string& name);  // every jinja2 builtin filter (some refuse when run)
// obj.name with jinja2's sandboxed getattr (attribute first, then item).
Value get_attr(const Value& obj, const std::string& name, int line);
// obj[key] (item first, then attribute for string keys).
Value get_item(const Value& obj, const Value& key, int line);
std::vector<Value> iterate(const Value& v, int line);  // for-loops, filters: lists, dict keys, string chars
Value make_globals_fn(const std::string& name, const RenderOptions& opt);  // range, namespace, dict, ...

// Python string helpers shared by filters and str methods.
std::string py_strip(const std::string& s, const Value* chars, bool left, bool right);
bool is_py_whitespace(const std::string& utf8_char);  // str.isspace() of one code point
std::string html_escape(const std::string& s);  // markupsafe.escape
bool is_word_char(const std::string& utf8_char);     // regex \w
std::string py_lower(const std::string& s);
std::string py_upper(const std::string& s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);
Value py_split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right);
std::string py_replace(const std::string& s, const std::string& a, const std::string& b, int64_t count);

}  // namespace strix::jinja
