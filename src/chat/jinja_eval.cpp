// Statement execution and expression evaluation with Python semantics.
#include "chat/jinja_eval.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"

namespace strix::jinja {

const Value* Frame::lookup(const std::string& name) const {
  for (const Frame* f = this; f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return &it->second;
  }
  return nullptr;
}

void raise(const std::string& message, int line) {
  throw TemplateError("template error (line " + std::to_string(line) + "): " + message);
}

namespace {

enum class Flow { kNormal, kBreak, kContinue };

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

struct Renderer {
  RenderOptions opt;
  // Every frame made during a render. Macros hold their defining frame, which
  // holds the macro: a shared_ptr cycle that release_frames() breaks.
  std::vector<std::weak_ptr<Frame>> frames;
  int call_depth = 0;  // macro nesting; Python stops runaway recursion with RecursionError

  std::shared_ptr<Frame> new_frame(std::shared_ptr<Frame> parent) {
    auto f = std::make_shared<Frame>();
    f->parent = std::move(parent);
    frames.push_back(f);
    return f;
  }
  void release_frames() {
    for (auto& w : frames)
      if (auto f = w.lock()) f->vars.clear();
    frames.clear();
  }

  void require_defined(const Value& v, int line) {
    if (v.is_undefined()) raise("'" + (v.s.empty() ? std::string("value") : v.s) + "' is undefined", line);
  }

  Value arith(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "~") return Value::string(to_str(a) + to_str(b));
    if (op == "%" && a.is_string() && a.s.find('%') == std::string::npos) {
      // printf-style formatting of a string without conversions: Python returns
      // it unchanged when the argument is an empty tuple or has __getitem__
      // (dict, list, str, Undefined), and raises otherwise.
      if ((b.kind == ValueKind::kList && b.list->is_tuple && b.list->items.empty()) ||
          (b.kind == ValueKind::kList && !b.list->is_tuple && b.list->lazy_kind.empty()) || b.is_dict() ||
          b.is_undefined())
        return a;
      raise("not all arguments converted during string formatting", line);
    }
    require_defined(a, line);
    require_defined(b, line);
    auto type_error = [&]() -> Value {
      raise("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'", line);
    };
    if (a.is_number() && b.is_number()) {
      bool flt = a.kind == ValueKind::kFloat || b.kind == ValueKind::kFloat;
      // Python ints are unbounded; past 64 bits we refuse rather than wrap.
      auto checked = [&](bool overflow, int64_t r) {
        if (overflow) throw Refusal("chat template computes an integer beyond 64 bits (line " + std::to_string(line) + "), which Strix does not implement");
        return Value::integer(r);
      };
      if (op == "+" || op == "-" || op == "*") {
        double x = a.as_double(), y = b.as_double();
        if (flt) return Value::number(op == "+" ? x + y : op == "-" ? x - y : x * y);
        int64_t r = 0;
        bool overflow = op == "+" ? __builtin_add_overflow(a.as_int(), b.as_int(), &r)
                        : op == "-" ? __builtin_sub_overflow(a.as_int(), b.as_int(), &r)
                                    : __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
        return checked(overflow, r);
      }
      if (op == "/") {
        if (b.as_double() == 0) raise("division by zero", line);
        return Value::number(a.as_double() / b.as_double());
      }
      if (op == "//" || op == "%") {
        if (b.as_double() == 0) raise(op == "%" ? "modulo by zero" : "integer division or modulo by zero", line);
        if (!flt) {
          int64_t q = floor_div(a.as_int(), b.as_int());
          return op == "//" ? Value::integer(q) : Value::integer(a.as_int() - q * b.as_int());
        }
        // CPython's float_divmod: fmod, then fix the sign to follow the divisor
        double x = a.as_double(), y = b.as_double();
        double mod = std::fmod(x, y);
        double div = (x - mod) / y;
        if (mod != 0.0) {
          if ((y < 0) != (mod < 0)) { mod += y; div -= 1.0; }
        } else {
          mod = std::copysign(0.0, y);
        }
        double floordiv;
        if (div != 0.0) {
          floordiv = std::floor(div);
          if (div - floordiv > 0.5) floordiv += 1.0;
        } else {
          floordiv = std::copysign(0.0, x / y);
        }
        return op == "//" ? Value::number(floordiv) : Value::number(mod);
      }
      if (op == "**") {
        if (!flt && b.as_int() >= 0) {
          // square-and-multiply, so huge exponents of 0/1/-1 stay cheap
          int64_t p = 1, base = a.as_int(), e = b.as_int();
          bool overflow = false;
          while (e > 0 && !overflow) {
            if (e & 1) overflow |= __builtin_mul_overflow(p, base, &p);
            e >>= 1;
            if (e > 0) overflow |= __builtin_mul_overflow(base, base, &base);
          }
          return checked(overflow, p);
        }
        return Value::number(std::pow(a.as_double(), b.as_double()));
      }
    }
    if (op == "+" && a.is_string() && b.is_string()) {
      if (!a.safe && !b.safe) return Value::string(a.s + b.s);
      // Markup (from |e or |safe) escapes the plain operand, whichever side it is on.
      Value r = Value::string((a.safe ? a.s : html_escape(a.s)) + (b.safe ? b.s : html_escape(b.s)));
      r.safe = true;
      return r;
    }
    if (op == "+" && a.is_list() && b.is_list() && a.list->is_tuple == b.list->is_tuple) {
      std::vector<Value> items = a.list->items;
      items.insert(items.end(), b.list->items.begin(), b.list->items.end());
      return Value::new_list(std::move(items), a.list->is_tuple);
    }
    if (op == "*" && ((a.is_string() || a.is_list()) && b.is_int())) {
      int64_t n = b.as_int();
      if (a.is_string()) {
        std::string r;
        for (int64_t k = 0; k < n; ++k) r += a.s;
        return Value::string(r);
      }
      std::vector<Value> items;
      for (int64_t k = 0; k < n; ++k) items.insert(items.end(), a.list->items.begin(), a.list->items.end());
      return Value::new_list(std::move(items), a.list->is_tuple);
    }
    if (op == "*" && a.is_int() && (b.is_string() || b.is_list())) return arith(op, b, a, line);
    if (op == "%" && a.is_string()) {
      throw Refusal("chat template uses printf-style string formatting ('%' on a string, line " + std::to_string(line) +
                    "), which Strix's Jinja interpreter does not implement");
    }
    return type_error();
  }

  bool contains(const Value& container, const Value& item, int line) {
    if (container.is_string()) {
      if (!item.is_string()) raise("'in <string>' requires string as left operand", line);
      return container.s.find(item.s) != std::string::npos;
    }
    if (container.kind == ValueKind::kList) {
      for (const auto& v : iterate(container, line))
        if (equals(v, item)) return true;
      return false;
    }
    if (container.is_dict()) {
      if (container.dict->is_namespace) raise("argument of type 'Namespace' is not iterable", line);
      if ((item.kind == ValueKind::kList && !item.list->is_tuple) || item.is_dict()) raise(std::string("unhashable type: '") + type_name(item) + "'", line);
      return item.is_string() && container.dict->find(item.s) != nullptr;
    }
    if (container.is_undefined()) return false;
    raise(std::string("argument of type '") + type_name(container) + "' is not iterable", line);
  }

  CallArgs eval_args(const Expr& e, size_t skip, const std::shared_ptr<Frame>& f) {
    CallArgs a;
    for (size_t k = skip; k < e.args.size(); ++k) a.pos.push_back(eval(*e.args[k], f));
    for (const auto& kv : e.kwargs) a.kw.emplace_back(kv.first, eval(*kv.second, f));
    return a;
  }

  Value slice(const Value& obj, const Expr& e, const std::shared_ptr<Frame>& f) {
    auto part = [&](int k) -> std::optional<int64_t> {
      if (!e.args[size_t(k)]) return std::nullopt;
      Value v = eval(*e.args[size_t(k)], f);
      if (v.is_none()) return std::nullopt;
      if (!v.is_int()) raise("slice indices must be integers or None", e.line);
      return v.as_int();
    };
    std::optional<int64_t> start = part(1), stop = part(2), step_o = part(3);
    int64_t step = step_o.value_or(1);
    if (step == 0) raise("slice step cannot be zero", e.line);
    std::vector<std::string> chars;
    const std::vector<Value>* items = nullptr;
    int64_t n;
    if (obj.is_string()) { chars = utf8_chars(obj.s); n = int64_t(chars.size()); }
    else if (obj.is_list()) { items = &obj.list->items; n = int64_t(items->size()); }
    else {  // jinja2 compiles slices to a plain Python subscript: anything else raises
      require_defined(obj, e.line);
      raise(std::string("'") + type_name(obj) + "' object is not subscriptable", e.line);
    }
    auto clamp = [&](std::optional<int64_t> v, int64_t def) {
      if (!v) return def;
      int64_t x = *v;
      if (x < 0) x += n;
      if (step > 0) return std::clamp<int64_t>(x, 0, n);
      return std::clamp<int64_t>(x, -1, n - 1);
    };
    int64_t lo = clamp(start, step > 0 ? 0 : n - 1), hi = clamp(stop, step > 0 ? n : -1);
    std::vector<int64_t> idx;
    if (step > 0) for (int64_t k = lo; k < hi; k += step) idx.push_back(k);
    else for (int64_t k = lo; k > hi; k += step) idx.push_back(k);
    if (obj.is_string()) {
      std::string r;
      for (int64_t k : idx) r += chars[size_t(k)];
      return Value::string(r);
    }
    std::vector<Value> out;
    for (int64_t k : idx) out.push_back((*items)[size_t(k)]);
    return Value::new_list(std::move(out), obj.list->is_tuple);
  }

  Value call(const Value& fn, CallArgs& args, int line, const std::string& what) {
    if (fn.kind != ValueKind::kCallable) {
      require_defined(fn, line);
      raise("'" + std::string(type_name(fn)) + "' object (" + what + ") is not callable", line);
    }
    return (*fn.fn)(args);
  }

  Value eval(const Expr& e, const std::shared_ptr<Frame>& f) {
    switch (e.kind) {
      case ExprKind::kLiteral: return e.literal;
      case ExprKind::kName: {
        const Value* v = f->lookup(e.name);
        return v ? *v : Value::undefined(e.name);
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const auto& a : e.args) items.push_back(eval(*a, f));
        return Value::new_list(std::move(items), e.kind == ExprKind::kTuple);
      }
      case ExprKind::kDict: {
        Value d = Value::new_dict();
        for (size_t k = 0; k + 1 < e.args.size(); k += 2) {
          Value key = eval(*e.args[k], f);
          if (!key.is_string()) throw Refusal("chat template uses a non-string dict key (line " + std::to_string(e.line) + "), which Strix's Jinja interpreter does not implement");
          d.dict->set(key.s, eval(*e.args[k + 1], f));
        }
        return d;
      }
      case ExprKind::kGetAttr: return get_attr(eval(*e.args[0], f), e.name, e.line);
      case ExprKind::kGetItem: return get_item(eval(*e.args[0], f), eval(*e.args[1], f), e.line);
      case ExprKind::kSlice: return slice(eval(*e.args[0], f), e, f);
      case ExprKind::kCall: {
        Value fn = eval(*e.args[0], f);
        CallArgs a = eval_args(e, 1, f);
        try {
          return call(fn, a, e.line, e.args[0]->kind == ExprKind::kName ? e.args[0]->name : std::string("expression"));
        } catch (const Refusal& r) {
          std::string msg = r.what();
          if (msg.find("(line ") != std::string::npos) throw;
          throw Refusal(msg + " (line " + std::to_string(e.line) + ")");
        }
      }
      case ExprKind::kFilter: {
        Value v = eval(*e.args[0], f);
        CallArgs a = eval_args(e, 1, f);
        return apply_filter(e.name, v, a, e.line);
      }
      case ExprKind::kTest: {
        if (!has_test(e.name)) raise("no test named '" + e.name + "'", e.line);
        Value v = eval(*e.args[0], f);
        CallArgs a = eval_args(e, 1, f);
        return Value::boolean(apply_test(e.name, v, a, e.line) != e.negated);
      }
      case ExprKind::kNeg:
      case ExprKind::kPos: {
        Value v = eval(*e.args[0], f);
        require_defined(v, e.line);
        if (!v.is_number()) raise(std::string("bad operand type for unary ") + (e.kind == ExprKind::kNeg ? "-" : "+") + ": '" + type_name(v) + "'", e.line);
        if (e.kind == ExprKind::kPos) return v.kind == ValueKind::kBool ? Value::integer(v.as_int()) : v;
        return v.kind == ValueKind::kFloat ? Value::number(-v.f) : Value::integer(-v.as_int());
      }
      case ExprKind::kNot: return Value::boolean(!truthy(eval(*e.args[0], f)));
      case ExprKind::kAnd: {
        Value l = eval(*e.args[0], f);
        return truthy(l) ? eval(*e.args[1], f) : l;
      }
      case ExprKind::kOr: {
        Value l = eval(*e.args[0], f);
        return truthy(l) ? l : eval(*e.args[1], f);
      }
      case ExprKind::kCond: {
        if (truthy(eval(*e.args[0], f))) return eval(*e.args[1], f);
        return e.args[2] ? eval(*e.args[2], f) : Value::undefined();
      }
      case ExprKind::kBinary: return arith(e.name, eval(*e.args[0], f), eval(*e.args[1], f), e.line);
      case ExprKind::kCompare: {
        Value l = eval(*e.args[0], f);
        for (size_t k = 0; k < e.ops.size(); ++k) {
          Value r = eval(*e.args[k + 1], f);
          const std::string& op = e.ops[k];
          bool ok;
          if (op == "==") ok = equals(l, r);
          else if (op == "!=") ok = !equals(l, r);
          else if (op == "in") ok = contains(r, l, e.line);
          else if (op == "notin") ok = !contains(r, l, e.line);
          else {
            if (l.is_undefined() || r.is_undefined()) raise("'" + (l.is_undefined() ? l.s : r.s) + "' is undefined", e.line);
            int c;
            try { c = compare(l, r); } catch (const TemplateError&) { throw; } catch (const Error& err) { raise(err.what(), e.line); }
            ok = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
          }
          if (!ok) return Value::boolean(false);
          l = r;
        }
        return Value::boolean(true);
      }
    }
    return Value::undefined();
  }

  // ---- statements ----------------------------------------------------------

  void assign(const std::shared_ptr<Frame>& f, const std::vector<std::string>& targets, const Value& v, int line) {
    if (targets.size() == 1) { f->vars[targets[0]] = v; return; }
    std::vector<Value> items = iterate(v, line);
    if (items.size() != targets.size())
      raise("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names", line);
    for (size_t k = 0; k < targets.size(); ++k) f->vars[targets[k]] = items[k];
  }

  std::string render_body(const Body& body, const std::shared_ptr<Frame>& f) {
    std::string out;
    Flow fl = exec(body, f, out);
    (void)fl;
    return out;
  }

  Value make_macro(const Stmt& s, const std::shared_ptr<Frame>& closure, bool is_caller) {
    const Stmt* sp = &s;
    return Value::callable([this, sp, closure, is_caller](CallArgs& a) -> Value {
      if (call_depth >= 256) raise("maximum macro recursion depth exceeded", sp->line);
      struct DepthGuard {
        int& d;
        explicit DepthGuard(int& x) : d(x) { ++d; }
        ~DepthGuard() { --d; }
      } guard(call_depth);
      auto mf = new_frame(closure);
      size_t np = sp->params.size();
      std::vector<Value> extra;
      for (size_t k = 0; k < a.pos.size(); ++k) {
        if (k < np) mf->vars[sp->params[k]] = a.pos[k];
        else extra.push_back(a.pos[k]);
      }
      Value kwargs = Value::new_dict();
      for (auto& kv : a.kw) {
        bool is_param = false;
        for (const auto& pn : sp->params) is_param |= pn == kv.first;
        if (is_param) mf->vars[kv.first] = kv.second;
        else if (kv.first == "caller" && !is_caller) mf->vars["caller"] = kv.second;
        else kwargs.dict->set(kv.first, kv.second);
      }
      for (size_t k = 0; k < np; ++k) {
        if (mf->vars.count(sp->params[k])) continue;
        mf->vars[sp->params[k]] = sp->defaults[k] ? eval(*sp->defaults[k], mf) : Value::undefined(sp->params[k]);
      }
      mf->vars["varargs"] = Value::new_list(std::move(extra), true);
      mf->vars["kwargs"] = kwargs;
      return Value::string(render_body(sp->body, mf));  // plain str: autoescape is off
    });
  }

  Flow exec(const Body& body, const std::shared_ptr<Frame>& f, std::string& out) {
    for (const auto& sp : body) {
      const Stmt& s = *sp;
      switch (s.kind) {
        case StmtKind::kText: out += s.text; break;
        case StmtKind::kOutput: out += to_str(eval(*s.expr, f)); break;
        case StmtKind::kIf:
          for (const auto& br : s.branches) {
            if (!br.first || truthy(eval(*br.first, f))) {
              Flow fl = exec(br.second, f, out);
              if (fl != Flow::kNormal) return fl;
              break;
            }
          }
          break;
        case StmtKind::kFor: exec_for(s, f, out); break;
        case StmtKind::kSet:
          if (!s.attr.empty()) {
            const Value* ns = f->lookup(s.targets[0]);
            if (!ns || !ns->is_dict() || !ns->dict->is_namespace) raise("cannot assign attribute on non-namespace object", s.line);
            ns->dict->set(s.attr, eval(*s.expr, f));
          } else {
            assign(f, s.targets, eval(*s.expr, f), s.line);
          }
          break;
        case StmtKind::kSetBlock:
        case StmtKind::kFilterBlock: {
          auto bf = new_frame(f);
          std::string text = render_body(s.body, s.kind == StmtKind::kSetBlock ? f : bf);
          bf->vars["\x01block"] = Value::string(text);
          Value v = eval(*s.expr, bf);
          if (s.kind == StmtKind::kSetBlock) assign(f, s.targets, v, s.line);
          else out += to_str(v);
          break;
        }
        case StmtKind::kMacro: f->vars[s.targets[0]] = make_macro(s, f, false); break;
        case StmtKind::kCallBlock: {
          Value fn = eval(*s.expr->args[0], f);
          CallArgs a = eval_args(*s.expr, 1, f);
          a.kw.emplace_back("caller", make_macro(s, f, true));
          out += to_str(call(fn, a, s.line, "call block"));
          break;
        }
        case StmtKind::kGeneration: {
          Flow fl = exec(s.body, f, out);
          if (fl != Flow::kNormal) return fl;
          break;
        }
        case StmtKind::kBreak: return Flow::kBreak;
        case StmtKind::kContinue: return Flow::kContinue;
      }
    }
    return Flow::kNormal;
  }

  void exec_for(const Stmt& s, const std::shared_ptr<Frame>& f, std::string& out) {
    Value seq = eval(*s.expr, f);
    std::vector<Value> items = iterate(seq, s.line);
    auto lf = new_frame(f);
    if (s.cond) {
      std::vector<Value> kept;
      for (const auto& it : items) {
        assign(lf, s.targets, it, s.line);
        if (truthy(eval(*s.cond, lf))) kept.push_back(it);
      }
      items = std::move(kept);
    }
    size_t n = items.size();
    for (size_t k = 0; k < n; ++k) {
      assign(lf, s.targets, items[k], s.line);
      Value loop = Value::new_dict();
      auto& d = *loop.dict;
      d.set("index", Value::integer(int64_t(k) + 1));
      d.set("index0", Value::integer(int64_t(k)));
      d.set("revindex", Value::integer(int64_t(n - k)));
      d.set("revindex0", Value::integer(int64_t(n - k) - 1));
      d.set("first", Value::boolean(k == 0));
      d.set("last", Value::boolean(k + 1 == n));
      d.set("length", Value::integer(int64_t(n)));
      d.set("depth", Value::integer(1));
      d.set("depth0", Value::integer(0));
      if (k > 0) d.set("previtem", items[k - 1]);
      if (k + 1 < n) d.set("nextitem", items[k + 1]);
      int line = s.line;
      d.set("cycle", Value::callable([k, line](CallArgs& a) -> Value {
        if (a.pos.empty()) raise("no items for cycling given", line);
        return a.pos[k % a.pos.size()];
      }));
      d.set("changed", Value::callable([line](CallArgs&) -> Value {
        throw Refusal("chat template uses loop.changed (line " + std::to_string(line) + "), which Strix's Jinja interpreter does not implement");
      }));
      lf->vars["loop"] = loop;
      Flow fl = exec(s.body, lf, out);
      if (fl == Flow::kBreak) break;
    }
    if (n == 0) exec(s.else_body, f, out);
  }
};

}  // namespace

std::string render(const Body& tmpl, const std::vector<std::pair<std::string, Value>>& context, const RenderOptions& opt) {
  Renderer r{opt, {}};
  auto globals = r.new_frame(nullptr);
  for (const char* g : {"range", "namespace", "dict", "raise_exception", "strftime_now", "cycler", "joiner", "lipsum"})
    globals->vars[g] = make_globals_fn(g, opt);
  auto top = r.new_frame(globals);
  for (const auto& kv : context) top->vars[kv.first] = kv.second;
  std::string out;
  try {
    r.exec(tmpl, top, out);
  } catch (...) {
    r.release_frames();
    throw;
  }
  r.release_frames();
  return out;
}

}  // namespace strix::jinja
