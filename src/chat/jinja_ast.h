// Tokens and syntax tree of the Jinja2 subset Strix interprets.
//
// The lexer applies Jinja's whitespace control while it cuts text from tags
// (trim_blocks, lstrip_blocks, `{%-`/`-%}`/`{{-`/`-}}`/`{#-`/`-#}`, `+`), so the
// parser and evaluator never see stripped whitespace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chat/jinja_value.h"

namespace strix::jinja {

enum class TokKind { kText, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOp, kEof };

struct Token {
  TokKind kind;
  std::string text;  // text data, name, unescaped string, number spelling, or operator
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

std::vector<Token> lex_template(const std::string& src, const LexOptions& opt);

enum class ExprKind {
  kLiteral, kName, kList, kTuple, kDict, kGetAttr, kGetItem, kSlice, kCall, kFilter, kTest,
  kNeg, kPos, kNot, kBinary, kCompare, kAnd, kOr, kCond
};

struct Expr;
using ExprPtr = std::shared_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  Value literal;                 // kLiteral
  std::string name;              // name / attribute / filter / test / binary operator
  std::vector<ExprPtr> args;     // children; meaning depends on kind (see parser)
  std::vector<std::pair<std::string, ExprPtr>> kwargs;  // call/filter/test keyword args
  std::vector<std::string> ops;  // kCompare operators, one per args[1..]
  bool negated = false;          // kTest: `is not`
  // kSlice: args = {obj, start, stop, step}, absent parts are nullptr.
};

enum class StmtKind { kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kBreak, kContinue, kGeneration };

struct Stmt;
using StmtPtr = std::shared_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;                 // kText
  ExprPtr expr;                     // output / for iterable / set value / call-block call / filter-block chain
  std::vector<std::pair<ExprPtr, Body>> branches;  // kIf: (condition, body); else has null condition
  std::vector<std::string> targets; // for / set names (tuple unpacking), macro name in targets[0]
  std::string attr;                 // `set ns.attr = ...`: targets[0] is ns
  ExprPtr cond;                     // for ... if cond
  Body body, else_body;
  std::vector<std::string> params;  // macro / caller parameters
  std::vector<ExprPtr> defaults;    // aligned with params (nullptr = required)
};

// Parses a template; throws strix::Error on syntax errors and strix::Refusal
// (naming the construct and line) on Jinja features Strix does not implement.
Body parse_template(const std::string& src, const LexOptions& opt = {});

}  // namespace strix::jinja
