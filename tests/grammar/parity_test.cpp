// The matcher against libllama's grammar sampler: random walks over real
// vocabularies where every step's allowed token set must be the same.
#include <gtest/gtest.h>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace strix::grammar::test {
namespace {

struct Case {
  const char* name;
  std::string gbnf;
};

std::vector<Case> cases() {
  return {
      {"json", builtin_json_grammar()},
      {"arithmetic",
       "root ::= (expr \"=\" ws term \"\\n\")+\n"
       "expr ::= term ([-+*/] term)*\n"
       "term ::= ident | num | \"(\" ws expr \")\" ws\n"
       "ident ::= [a-z] [a-z0-9_]* ws\n"
       "num ::= [0-9]+ ws\n"
       "ws ::= [ \\t\\n]*\n"},
      {"bounded_lists",
       "root ::= \"[\" item{1,3} (\",\" item){0,4} \"]\" tail{2}\n"
       "item ::= [a-c]{2,} | [0-9]{1,3} | \"x\"{3}\n"
       "tail ::= [.!?]\n"},
      {"utf8_classes",
       "# non-ASCII classes, ranges and negation\n"
       "root ::= ([α-ω]{1,4} | \"é\" | [^a-zA-Z0-9\\x00-\\x1F] | \"\\u00fc\" | [\\U0001F600-\\U0001F64F])+ \"!\"\n"},
      {"alternatives_nested",
       "root ::= (\"Once\" (\" upon\" | \" there\" (\" was\" | \" were\")?)+ | \"The\" [ a-z]{0,10}) (\".\" | \"!\") "
       "rest\n"
       "rest ::= ((\" \" [A-Z] [a-z]*)* | \"\\n\") | \"\"\n"},
      {"any_char", "root ::= \"The \" .{0,12} \".\" | [\\[\\]\\-\\\\\\\"]+ \" end\"\n"},
      {"negated_class", "root ::= \"\\\"\" [^\"\\n]* \"\\\"\" [^a-z]?\n"},
  };
}

TEST(GrammarParity, allowed_sets_match_libllama_on_stories260K) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  int total = 0, partial = 0, completions = 0;
  for (const Case& c : cases()) {
    WalkOptions opt;
    opt.steps = 700;
    opt.seed = 7;
    const WalkResult r = parity_walk(v, c.gbnf, c.gbnf, opt);
    report(c.name, r);
    EXPECT_EQ(r.mismatches, 0) << c.name;
    EXPECT_EQ(r.steps, opt.steps) << c.name;
    total += r.steps;
    partial += r.partial_states;
    completions += r.completions;
  }
  EXPECT_GE(total, 4000);
  // byte-fallback tokens must have carried unfinished UTF-8 sequences across tokens
  EXPECT_GT(partial, 0);
  EXPECT_GT(completions, 0);
}

TEST(GrammarParity, allowed_sets_match_libllama_on_bpe_vocab) {
  VocabPair& v = bpe();
  int completions = 0;
  for (const Case& c : cases()) {
    WalkOptions opt;
    opt.steps = 40;
    opt.seed = 11;
    const WalkResult r = parity_walk(v, c.gbnf, c.gbnf, opt);
    report(c.name, r);
    EXPECT_EQ(r.mismatches, 0) << c.name;
    completions += r.completions;
  }
  EXPECT_GT(completions, 0);
}

TEST(GrammarParity, token_references_match_libllama) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  // <s> / </s> are control tokens of the vocab; <[id]> by number; !<[id]> any token but one
  const std::string gbnf = "root ::= \"A\" <s> [a-z ]{1,5} (<[300]> | !<[2]> \"!\")+ </s>? \".\"\n";
  WalkOptions opt;
  opt.steps = 400;
  opt.seed = 3;
  const WalkResult r = parity_walk(v, gbnf, gbnf, opt);
  report("tokens", r);
  EXPECT_EQ(r.mismatches, 0);
  // the walk met libllama's quirk (allowed by apply, refused by accept) and we refused too
  EXPECT_GT(r.ref_refusals, 0);
}

TEST(GrammarParity, lazy_grammar_matches_libllama) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  const std::string gbnf = "root ::= \"{\" [a-z ]* \"}\"\n";
  WalkOptions opt;
  opt.steps = 300;
  opt.seed = 5;
  opt.lazy = true;
  opt.prefix = {"Once upon a time {"};
  opt.trigger_patterns = {"[\\s\\S]*?(\\{)[\\s\\S]*"};
  WalkResult r = parity_walk(v, gbnf, gbnf, opt);
  report("lazy search", r);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_GT(r.active, 0);
  EXPECT_LT(r.active, r.steps);
  // a full-match ("^...$") pattern and a trigger token
  opt.trigger_patterns = {"^[\\s\\S]*time (\\{)$"};
  opt.trigger_tokens = {v.ours->tokenize(" time", false, false).back()};
  opt.prefix = {"Once upon a time {"};
  r = parity_walk(v, "root ::= [ a-z{]* \"}\"\n", "root ::= [ a-z{]* \"}\"\n", opt);
  report("lazy full/token", r);
  EXPECT_EQ(r.mismatches, 0);
  EXPECT_GT(r.active, 0);
}

TEST(GrammarParity, negative_control_different_grammar_differs) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  WalkOptions opt;
  opt.steps = 300;
  opt.seed = 9;
  // one range narrowed by a letter
  WalkResult r = parity_walk(v, "root ::= [a-z ]+ \".\"\n", "root ::= [a-y ]+ \".\"\n", opt);
  report("control range", r);
  EXPECT_GT(r.mismatches, 0);
  // a bound changed
  r = parity_walk(v, "root ::= [a-z]{1,3} \".\"\n", "root ::= [a-z]{1,4} \".\"\n", opt);
  report("control bound", r);
  EXPECT_GT(r.mismatches, 0);
}

TEST(GrammarMatcher, accept_refuses_forbidden_token_and_keeps_state) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  std::shared_ptr<const Grammar> g = Grammar::parse("root ::= \"ab\"\n");
  Matcher m(g, *v.ours, v.table);
  const int32_t x = v.ours->vocab().find("x");
  ASSERT_GE(x, 0);
  EXPECT_THROW(m.accept(x), Error);
  EXPECT_FALSE(m.is_complete());
  EXPECT_THROW(m.accept(v.ours->vocab().eos), Error);  // end before the grammar is complete
  const int32_t a = v.ours->vocab().find("a");
  const int32_t b = v.ours->vocab().find("b");
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  m.accept(a);
  m.accept(b);
  EXPECT_TRUE(m.is_complete());
  m.accept(v.ours->vocab().eos);
  EXPECT_THROW(m.accept(-1), Error);
  m.reset();
  EXPECT_FALSE(m.is_complete());
}

TEST(GrammarMatcher, refuses_invalid_trigger_pattern) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  std::shared_ptr<const Grammar> g = Grammar::parse("root ::= \"a\"\n");
  try {
    Matcher m(g, *v.ours, v.table, LazyOptions{true, {"([a-z"}, {}});
    ADD_FAILURE() << "an unbalanced trigger regex was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid trigger pattern"), std::string::npos);
  }
}

TEST(GrammarMatcher, full_logit_row_apply_matches_candidate_apply) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  std::shared_ptr<const Grammar> g = Grammar::parse(builtin_json_grammar());
  Matcher m(g, *v.ours, v.table);
  const int32_t n = v.ours->vocab().n_tokens();
  std::vector<float> row(static_cast<size_t>(n), 1.0f);
  std::vector<TokenData> cand;
  for (int32_t i = n - 1; i >= 0; --i) cand.push_back({i, 1.0f, 0.0f});  // any order
  m.apply(row);
  m.apply(cand.data(), cand.size());
  for (const TokenData& c : cand) EXPECT_EQ(std::isfinite(c.logit), std::isfinite(row[c.id])) << c.id;
}

}  // namespace
}  // namespace strix::grammar::test
