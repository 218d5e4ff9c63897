// Recursive-descent parser following jinja2.parser's precedence:
//   cond-expr > or > and > not > compare > +,- > ~ > *,/,//,% > ** > unary
//   > primary with postfix (.attr, [item], (call)) and filters/tests (| f, is t).
#include <cstdlib>

#include "chat/jinja_ast.h"
#include "chat/jinja_eval.h"
#include "core/error.h"

namespace strix::jinja {

namespace {

struct Parser {
  std::vector<Token> toks;
  size_t p = 0;

  const Token& cur() const { return toks[p]; }
  const Token& peek(size_t n = 1) const { return toks[std::min(p + n, toks.size() - 1)]; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("template syntax error (line " + std::to_string(cur().line) + "): " + what);
  }
  [[noreturn]] void refuse(const std::string& what) const {
    throw Refusal("chat template uses " + what + " (line " + std::to_string(cur().line) + "), which Strix's Jinja interpreter does not implement");
  }
  bool is_op(const char* op) const { return cur().kind == TokKind::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == TokKind::kName && cur().text == n; }
  bool accept_op(const char* op) { if (is_op(op)) { ++p; return true; } return false; }
  bool accept_name(const char* n) { if (is_name(n)) { ++p; return true; } return false; }
  void expect_op(const char* op) { if (!accept_op(op)) fail(std::string("expected '") + op + "'"); }
  std::string expect_name() {
    if (cur().kind != TokKind::kName) fail("expected a name");
    return toks[p++].text;
  }
  void expect_block_end() {
    if (cur().kind != TokKind::kBlockEnd) fail("expected end of statement block, got '" + cur().text + "'");
    ++p;
  }

  ExprPtr node(ExprKind k, int line) { auto e = std::make_shared<Expr>(); e->kind = k; e->line = line; return e; }

  // ---- expressions -------------------------------------------------------

  ExprPtr expression(bool with_cond = true) {
    int line = cur().line;
    ExprPtr e = or_expr();
    if (with_cond && accept_name("if")) {
      auto c = node(ExprKind::kCond, line);
      ExprPtr test = or_expr();
      ExprPtr other = accept_name("else") ? expression() : nullptr;
      c->args = {test, e, other};
      return c;
    }
    return e;
  }
  ExprPtr or_expr() {
    ExprPtr l = and_expr();
    while (is_name("or")) { int line = cur().line; ++p; auto n = node(ExprKind::kOr, line); n->args = {l, and_expr()}; l = n; }
    return l;
  }
  ExprPtr and_expr() {
    ExprPtr l = not_expr();
    while (is_name("and")) { int line = cur().line; ++p; auto n = node(ExprKind::kAnd, line); n->args = {l, not_expr()}; l = n; }
    return l;
  }
  ExprPtr not_expr() {
    if (is_name("not")) { int line = cur().line; ++p; auto n = node(ExprKind::kNot, line); n->args = {not_expr()}; return n; }
    return compare();
  }
  ExprPtr compare() {
    int line = cur().line;
    ExprPtr first = math1();
    auto c = node(ExprKind::kCompare, line);
    c->args.push_back(first);
    while (true) {
      std::string op;
      if (cur().kind == TokKind::kOp && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                         cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = toks[p++].text;
      } else if (accept_name("in")) {
        op = "in";
      } else if (is_name("not") && peek().kind == TokKind::kName && peek().text == "in") {
        p += 2;
        op = "notin";
      } else {
        break;
      }
      c->ops.push_back(op);
      c->args.push_back(math1());
    }
    return c->ops.empty() ? first : c;
  }
  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto n = node(ExprKind::kBinary, line);
    n->name = op;
    n->args = {std::move(l), std::move(r)};
    return n;
  }
  ExprPtr math1() {
    ExprPtr l = concat();
    while (is_op("+") || is_op("-")) { int line = cur().line; std::string op = toks[p++].text; l = binary(op, l, concat(), line); }
    return l;
  }
  ExprPtr concat() {
    ExprPtr l = math2();
    while (is_op("~")) { int line = cur().line; ++p; l = binary("~", l, math2(), line); }
    return l;
  }
  ExprPtr math2() {
    ExprPtr l = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      int line = cur().line;
      std::string op = toks[p++].text;
      l = binary(op, l, power(), line);
    }
    return l;
  }
  ExprPtr power() {
    ExprPtr l = unary(true);
    while (is_op("**")) { int line = cur().line; ++p; l = binary("**", l, unary(true), line); }
    return l;
  }
  ExprPtr unary(bool with_filter) {
    int line = cur().line;
    ExprPtr e;
    if (accept_op("-")) { e = node(ExprKind::kNeg, line); e->args = {unary(false)}; }
    else if (accept_op("+")) { e = node(ExprKind::kPos, line); e->args = {unary(false)}; }
    else e = primary();
    e = postfix(e);
    if (with_filter) e = filter_expr(e);
    return e;
  }
  ExprPtr primary() {
    const Token& t = cur();
    int line = t.line;
    if (t.kind == TokKind::kName) {
      ++p;
      auto e = node(ExprKind::kLiteral, line);
      if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
      else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
      else if (t.text == "none" || t.text == "None") e->literal = Value::none();
      else { e->kind = ExprKind::kName; e->name = t.text; }
      return e;
    }
    if (t.kind == TokKind::kString) {
      std::string s;
      while (cur().kind == TokKind::kString) s += toks[p++].text;  // adjacent literals concatenate
      auto e = node(ExprKind::kLiteral, line);
      e->literal = Value::string(s);
      return e;
    }
    if (t.kind == TokKind::kInt || t.kind == TokKind::kFloat) {
      ++p;
      auto e = node(ExprKind::kLiteral, line);
      e->literal = t.kind == TokKind::kInt ? Value::integer(std::strtoll(t.text.c_str(), nullptr, 10))
                                           : Value::number(std::strtod(t.text.c_str(), nullptr));
      return e;
    }
    if (accept_op("(")) {
      if (accept_op(")")) return node(ExprKind::kTuple, line);
      ExprPtr first = expression();
      if (accept_op(")")) return first;
      auto tup = node(ExprKind::kTuple, line);
      tup->args.push_back(first);
      while (accept_op(",")) {
        if (is_op(")")) break;
        tup->args.push_back(expression());
      }
      expect_op(")");
      return tup;
    }
    if (accept_op("[")) {
      auto l = node(ExprKind::kList, line);
      while (!is_op("]")) {
        l->args.push_back(expression());
        if (!accept_op(",")) break;
      }
      expect_op("]");
      return l;
    }
    if (accept_op("{")) {
      auto d = node(ExprKind::kDict, line);
      while (!is_op("}")) {
        d->args.push_back(expression());
        expect_op(":");
        d->args.push_back(expression());
        if (!accept_op(",")) break;
      }
      expect_op("}");
      return d;
    }
    fail("unexpected '" + t.text + "'");
  }
  void call_args(ExprPtr& call) {
    // '(' already consumed
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) refuse("*args/**kwargs in a call");
      if (cur().kind == TokKind::kName && peek().kind == TokKind::kOp && peek().text == "=") {
        std::string k = toks[p].text;
        p += 2;
        call->kwargs.emplace_back(k, expression());
      } else {
        if (!call->kwargs.empty()) fail("positional argument after keyword argument");
        call->args.push_back(expression());
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }
  ExprPtr postfix(ExprPtr e) {
    while (true) {
      int line = cur().line;
      if (accept_op(".")) {
        auto g = node(ExprKind::kGetAttr, line);
        if (cur().kind == TokKind::kName) g->name = toks[p++].text;
        else if (cur().kind == TokKind::kInt) { g->kind = ExprKind::kGetItem; auto lit = node(ExprKind::kLiteral, line); lit->literal = Value::integer(std::atoll(toks[p++].text.c_str())); g->args = {e, lit}; e = g; continue; }
        else fail("expected attribute name");
        g->args = {e};
        e = g;
      } else if (accept_op("[")) {
        ExprPtr parts[3] = {nullptr, nullptr, nullptr};
        bool is_slice = false;
        int idx = 0;
        while (!is_op("]")) {
          if (accept_op(":")) { is_slice = true; ++idx; if (idx > 2) fail("bad slice"); continue; }
          if (parts[idx]) fail("bad subscript");
          parts[idx] = expression();
          if (!is_slice && is_op(",")) {  // x[a, b]: the key is a tuple
            auto tup = node(ExprKind::kTuple, line);
            tup->args.push_back(parts[idx]);
            while (accept_op(",")) {
              if (is_op("]")) break;
              tup->args.push_back(expression());
            }
            parts[idx] = tup;
          }
        }
        expect_op("]");
        if (is_slice) {
          auto s = node(ExprKind::kSlice, line);
          s->args = {e, parts[0], parts[1], parts[2]};
          e = s;
        } else {
          if (!parts[0]) fail("empty subscript");
          auto g = node(ExprKind::kGetItem, line);
          g->args = {e, parts[0]};
          e = g;
        }
      } else if (accept_op("(")) {
        auto c = node(ExprKind::kCall, line);
        c->args.push_back(e);
        call_args(c);
        e = c;
      } else {
        return e;
      }
    }
  }
  std::string dotted_name() {
    std::string n = expect_name();
    while (is_op(".") && peek().kind == TokKind::kName) { p++; n += "." + expect_name(); }
    return n;
  }
  ExprPtr filter_expr(ExprPtr e) {
    while (true) {
      int line = cur().line;
      if (accept_op("|")) {
        e = filter_call(e, line);
      } else if (accept_name("is")) {
        auto t = node(ExprKind::kTest, line);
        t->negated = accept_name("not");
        t->name = dotted_name();
        t->args.push_back(e);
        const Token& a = cur();
        if (accept_op("(")) {
          call_args(t);
        } else if ((a.kind == TokKind::kName && a.text != "else" && a.text != "or" && a.text != "and") ||
                   a.kind == TokKind::kString || a.kind == TokKind::kInt || a.kind == TokKind::kFloat ||
                   (a.kind == TokKind::kOp && (a.text == "[" || a.text == "{")) || (a.kind == TokKind::kOp && a.text == "-")) {
          if (a.kind == TokKind::kOp && a.text == "-") {
            // jinja2 does not accept `is divisibleby -1` without parentheses either
            fail("unexpected '-' after test name");
          }
          t->args.push_back(postfix(primary()));
        }
        e = t;
      } else if (accept_op("(")) {
        auto c = node(ExprKind::kCall, line);
        c->args.push_back(e);
        call_args(c);
        e = c;
      } else {
        return e;
      }
    }
  }
  ExprPtr filter_call(ExprPtr e, int line) {
    auto f = node(ExprKind::kFilter, line);
    f->name = dotted_name();
    f->args.push_back(e);
    if (accept_op("(")) call_args(f);
    return f;
  }

  // ---- statements --------------------------------------------------------

  // Parses statements until a block whose first name is in `ends`; leaves p at that name.
  Body subparse(const std::vector<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokKind::kEof) {
        if (!ends.empty()) fail("unexpected end of template, expected '" + ends[0] + "'");
        return body;
      }
      if (t.kind == TokKind::kText) {
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::kText;
        s->line = t.line;
        s->text = t.text;
        body.push_back(s);
        ++p;
      } else if (t.kind == TokKind::kVarBegin) {
        ++p;
        auto s = std::make_shared<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = t.line;
        s->expr = expression();
        if (cur().kind != TokKind::kVarEnd) fail("expected end of print statement, got '" + cur().text + "'");
        ++p;
        body.push_back(s);
      } else if (t.kind == TokKind::kBlockBegin) {
        ++p;
        if (cur().kind == TokKind::kName)
          for (const auto& e : ends)
            if (cur().text == e) return body;
        body.push_back(statement());
      } else {
        fail("unexpected token");
      }
    }
  }

  void end_tag(const char* name) {
    if (!accept_name(name)) fail(std::string("expected '") + name + "'");
    expect_block_end();
  }

  std::vector<std::string> assign_targets() {
    std::vector<std::string> names;
    bool paren = accept_op("(");
    names.push_back(expect_name());
    while (accept_op(",")) {
      if (cur().kind != TokKind::kName) break;
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr statement() {
    auto s = std::make_shared<Stmt>();
    s->line = cur().line;
    if (cur().kind != TokKind::kName) fail("expected a statement name");
    std::string kw = toks[p++].text;
    if (kw == "if") {
      s->kind = StmtKind::kIf;
      ExprPtr c = expression();
      expect_block_end();
      while (true) {
        Body b = subparse({"elif", "else", "endif"});
        s->branches.emplace_back(c, std::move(b));
        std::string which = toks[p++].text;
        if (which == "elif") { c = expression(); expect_block_end(); continue; }
        expect_block_end();
        if (which == "else") {
          Body eb = subparse({"endif"});
          s->branches.emplace_back(nullptr, std::move(eb));
          end_tag("endif");
        }
        break;
      }
    } else if (kw == "for") {
      s->kind = StmtKind::kFor;
      s->targets = assign_targets();
      if (!accept_name("in")) fail("expected 'in'");
      s->expr = expression(false);
      if (accept_name("if")) s->cond = expression(false);
      if (is_name("recursive")) refuse("recursive for loops");
      expect_block_end();
      s->body = subparse({"endfor", "else"});
      if (toks[p++].text == "else") {
        expect_block_end();
        s->else_body = subparse({"endfor"});
        ++p;
      }
      expect_block_end();
    } else if (kw == "set") {
      std::string first = expect_name();
      if (accept_op(".")) {
        s->kind = StmtKind::kSet;
        s->targets = {first};
        s->attr = expect_name();
        expect_op("=");
        s->expr = expression();
        expect_block_end();
      } else {
        s->targets = {first};
        while (accept_op(",")) s->targets.push_back(expect_name());
        if (accept_op("=")) {
          s->kind = StmtKind::kSet;
          s->expr = expression();
          if (s->targets.size() > 1 && is_op(",")) {
            refuse("a bare tuple on the right of set");
          }
          expect_block_end();
        } else {
          s->kind = StmtKind::kSetBlock;
          // optional filter chain applied to the block: {% set x | trim %}
          auto ph = node(ExprKind::kName, s->line);
          ph->name = "\x01block";
          ExprPtr chain = ph;
          while (accept_op("|")) chain = filter_call(chain, cur().line);
          s->expr = chain;
          expect_block_end();
          s->body = subparse({"endset"});
          end_tag("endset");
        }
      }
    } else if (kw == "macro" || kw == "call") {
      s->kind = kw == "macro" ? StmtKind::kMacro : StmtKind::kCallBlock;
      if (kw == "macro") s->targets = {expect_name()};
      if (accept_op("(")) {
        while (!is_op(")")) {
          s->params.push_back(expect_name());
          s->defaults.push_back(accept_op("=") ? expression() : nullptr);
          if (!accept_op(",")) break;
        }
        expect_op(")");
      }
      if (kw == "call") {
        s->expr = expression();
        if (s->expr->kind != ExprKind::kCall) fail("expected a call in call block");
      }
      expect_block_end();
      s->body = subparse({kw == "macro" ? "endmacro" : "endcall"});
      end_tag(kw == "macro" ? "endmacro" : "endcall");
    } else if (kw == "filter") {
      s->kind = StmtKind::kFilterBlock;
      auto ph = node(ExprKind::kName, s->line);
      ph->name = "\x01block";
      ExprPtr chain = filter_call(ph, s->line);
      while (accept_op("|")) chain = filter_call(chain, cur().line);
      s->expr = chain;
      expect_block_end();
      s->body = subparse({"endfilter"});
      end_tag("endfilter");
    } else if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      expect_block_end();
    } else if (kw == "generation") {
      // transformers' AssistantTracker tag: renders its body unchanged.
      s->kind = StmtKind::kGeneration;
      expect_block_end();
      s->body = subparse({"endgeneration"});
      end_tag("endgeneration");
    } else if (kw == "do") {
      // Not enabled in HF's environment either (only loopcontrols), so jinja2
      // rejects it as an unknown tag; we say so by name.
      fail("encountered unknown tag 'do' (the jinja2.ext.do extension is not enabled for chat templates)");
    } else if (kw == "include" || kw == "extends" || kw == "import" || kw == "from" || kw == "block" ||
               kw == "with" || kw == "autoescape" || kw == "trans") {
      refuse("the '" + kw + "' tag");
    } else {
      fail("encountered unknown tag '" + kw + "'");
    }
    return s;
  }
};

// jinja2 rejects unknown filters and tests when it compiles a template, except
// in "soft" places (if conditions and bodies, conditional expressions), where
// they fail only if evaluated; loop, macro, call and filter bodies are hard again.
void check_names(const Expr& e, bool soft) {
  if (!soft && e.kind == ExprKind::kFilter && !has_filter(e.name))
    throw Error("template syntax error (line " + std::to_string(e.line) + "): no filter named '" + e.name + "'");
  if (!soft && e.kind == ExprKind::kTest && !has_test(e.name))
    throw Error("template syntax error (line " + std::to_string(e.line) + "): no test named '" + e.name + "'");
  bool child_soft = soft || e.kind == ExprKind::kCond;
  for (const auto& a : e.args)
    if (a) check_names(*a, child_soft);
  for (const auto& kv : e.kwargs) check_names(*kv.second, child_soft);
}

void check_names(const Body& body, bool soft) {
  for (const auto& sp : body) {
    const Stmt& s = *sp;
    if (s.expr) check_names(*s.expr, s.kind == StmtKind::kFilterBlock || s.kind == StmtKind::kSetBlock ? false : soft);
    if (s.cond) check_names(*s.cond, soft);
    for (const auto& d : s.defaults)
      if (d) check_names(*d, soft);
    for (const auto& br : s.branches) {
      if (br.first) check_names(*br.first, true);
      check_names(br.second, true);
    }
    check_names(s.body, false);  // for/macro/call/filter/set-block bodies get a new (hard) frame
    check_names(s.else_body, false);
  }
}

}  // namespace

Body parse_template(const std::string& src, const LexOptions& opt) {
  Parser ps{lex_template(src, opt), 0};
  Body b = ps.subparse({});
  check_names(b, false);
  return b;
}

}  // namespace strix::jinja
