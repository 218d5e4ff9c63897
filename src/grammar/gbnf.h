// GBNF grammars, parsed with llama.cpp's syntax and semantics (the pinned
// libllama's llama_grammar_parser), into the same rule representation: each
// rule is a flat list of elements, alternatives separated by kAlt and the rule
// closed by kEnd; groups and repetitions become generated rules named
// "<rule>_<n>" exactly as llama.cpp numbers them.
//
//   auto g = grammar::Grammar::parse("root ::= [a-z]+ (\",\" [a-z]+)*\n");
//   g->rules()[g->root()];          // elements of the start rule
//   g->to_string();                 // llama_grammar_parser::print's text
//
// Syntax: name ::= alternatives; "literal", [class] [^negated] with ranges
// a-z, escapes \x.. \u.... \U........ \t \n \r \\ \" \[ \] \-, `.` any code
// point, groups ( ), repetition * + ? {m} {m,} {m,n}, # comments, token
// references <[id]> and <token-text> (the latter needs a tokenizer: the text
// must tokenize to exactly one token with special tokens parsed) and their
// negation !<...>.
//
// Every problem is one strix::Error naming it and where (line:column of the
// grammar text): undefined rule, missing root, unbalanced brackets or quotes,
// bad escapes, repetition without a preceding item, too many repetitions,
// left recursion (refused as libllama refuses it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strix::tok {
class Tokenizer;
}

namespace strix::grammar {

// llama_gretype, same order.
enum class ElementType : uint8_t {
  kEnd,           // end of a rule
  kAlt,           // start of another alternative
  kRuleRef,       // value: rule id
  kChar,          // value: code point; may be followed by kCharAlt / kCharRngUpper
  kCharNot,       // negated class: value is its first code point
  kCharRngUpper,  // inclusive upper bound of the range started by the previous char element
  kCharAlt,       // another code point (or range start) of the same class
  kCharAny,       // `.`: any code point
  kToken,         // value: token id
  kTokenNot,      // any token but value
};

struct Element {
  ElementType type;
  uint32_t value;
  bool operator==(const Element&) const = default;
};

using Rule = std::vector<Element>;  // always ends with kEnd

class Grammar {
 public:
  // Parses GBNF text. `tokenizer` resolves <token-text> references (without
  // one they are an error, as in libllama without a vocab). Throws
  // strix::Error with the position on any problem listed above.
  static std::unique_ptr<Grammar> parse(const std::string& gbnf, const std::string& root = "root",
                                        const tok::Tokenizer* tokenizer = nullptr);

  const std::vector<Rule>& rules() const { return rules_; }
  uint32_t root() const { return root_; }
  // The rule's name (generated rules: "<parent>_<id>").
  const std::string& rule_name(uint32_t id) const { return names_.at(id); }
  // The grammar as llama_grammar_parser::print writes it (one rule a line).
  std::string to_string() const;

 private:
  Grammar() = default;
  std::vector<Rule> rules_;
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

}  // namespace strix::grammar
