// GBNF parsing: structure, error messages with positions, and the parse
// verdict (accepted / refused) against libllama on malformed and fuzzed
// grammars.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>


#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace strix::grammar::test {
namespace {

std::string error_of(const std::string& gbnf, const tok::Tokenizer* tk = nullptr) {
  try {
    Grammar::parse(gbnf, "root", tk);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gbnf, builds_llama_rules_for_repetitions_and_groups) {
  const auto g = Grammar::parse("root ::= (\"a\" | [b-d])+ x?\nx ::= [^\\n]{2,3}\n");
  // the rule numbering libllama's print shows: groups and repetitions become root_N / x_N
  // Expected text worked out by hand from llama.cpp's rewrite rules: S+ -> S S' with
  // S' ::= S S' | ; S? -> S' with S' ::= S | ; S{2,3} -> S S S' with S' ::= S | ;
  // generated rules are named <rule>_<id> in the order they are created.
  EXPECT_EQ(g->to_string(),
            "root ::= root_1 root_2 root_4 \n"
            "root_1 ::= [a] | [b-d] \n"
            "root_2 ::= root_1 root_2 | \n"
            "x ::= [^<U+000A>] [^<U+000A>] x_5 \n"
            "root_4 ::= x | \n"
            "x_5 ::= [^<U+000A>] | \n");
}

TEST(Gbnf, reports_errors_with_position) {
  EXPECT_NE(error_of("root ::= foo\n").find("undefined rule 'foo'"), std::string::npos);
  EXPECT_NE(error_of("a ::= \"x\"\n").find("no rule named 'root'"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\" \"b\"\n").find("unbalanced '('"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\" ]\n").find("expecting ')' at line 1, column 15"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc\n").find("line 1, column 10"), std::string::npos);
  EXPECT_NE(error_of("root ::= [abc\n").find("character class"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nx ::= \"\\q\"\n").find("unknown escape at line 2, column 8"), std::string::npos);
  EXPECT_NE(error_of("root ::= * \"a\"\n").find("expecting an item"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{2001}\n").find("too many repetitions"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,1}\n").find("maximum below"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"\\x4\"\n").find("hex digits"), std::string::npos);
  EXPECT_NE(error_of("root ::= <eos>\n").find("needs a tokenizer"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\" )\n").find("unbalanced ')'"), std::string::npos);
  EXPECT_NE(error_of("root := \"a\"\n").find("expecting '::='"), std::string::npos);
  EXPECT_NE(error_of("").find("no rules"), std::string::npos);
  try {
    Grammar::parse("root ::= x \"a\"\nx ::= root | \"b\"\n");
    ADD_FAILURE() << "left recursion accepted";
  } catch (const Refusal& e) {
    EXPECT_NE(std::string(e.what()).find("left recursion"), std::string::npos);
  }
}

TEST(Gbnf, accepts_comments_escapes_and_token_references) {
  const auto g = Grammar::parse(
      "# comment\nroot ::= \"\\t\\n\\r\\\\\\\"\\[\\]\" [\\x41-\\u0042\\U0001F600] . # trailing\n"
      "x ::= ( \"a\"\n  | \"b\" ) | <[12]> !<[3]>  # newlines inside groups only\n");
  EXPECT_EQ(g->rules()[g->root()].back().type, ElementType::kEnd);
}

// libllama's verdict: does llama_sampler_init_grammar return a sampler?
bool ref_accepts(VocabPair& v, const std::string& gbnf) {
  StderrSilencer quiet;  // its parser prints each error with the grammar
  try {
    ref::LlamaSampler s;
    s.grammar(*v.ref, gbnf, "root");
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool ours_accepts(VocabPair& v, const std::string& gbnf) {
  try {
    Grammar::parse(gbnf, "root", v.ours.get());
    return true;
  } catch (const Error&) {
    return false;
  }
}

const std::vector<std::string>& malformed() {
  static const std::vector<std::string> m = {
      "root ::= foo\n",
      "a ::= \"x\"\n",
      "root ::= (\"a\"\n",
      "root ::= \"a\")\n",
      "root ::= [a-\n",
      "root ::= [a-z\n",
      "root ::= \"a\n",
      "root ::= \"\\y\"\n",
      "root ::= +\n",
      "root ::= \"a\"{2001}\n",
      "root ::= (\"a\"{50}){50}\n",
      "root ::= x\nx ::= x \"a\"\n",
      "root ::= x\nx ::= y? \"a\"\ny ::= \"\" | x\n",
      "root ::= \"a\"{,3}\n",
      "root ::= \"a\"{2 3}\n",
      "root ::= <[12\n",
      "root ::= !\"a\"\n",
      "root ::= <notatoken-xyz>\n",
      "root ::= \"a\" root\n",  // right recursion: fine
      "root ::= []\n",
      "root ::= [^]\n",
      "root ::= \"a\"{0}\n",
      "root ::= \"a\"{2,2001}\n",
      "root ::= <s> </s>\n",
      "root ::= \"\\u12\"\n",
      "root::=\"a\"\n",
      "root ::= \"a\" # c\n\n\n  | \"b\"\n",
      "root ::= \"a\"\r\nb ::= \"c\"\r\n",
      "   \n# nothing\n",
  };
  return m;
}

TEST(GbnfParity, malformed_grammar_verdicts_match_libllama) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  for (const std::string& g : malformed()) EXPECT_EQ(ours_accepts(v, g), ref_accepts(v, g)) << g;
  // An empty string is "no grammar" to libllama's sampler (a no-op stage);
  // for us it is not a grammar, and the sampler treats "" as unconstrained.
  EXPECT_TRUE(ref_accepts(v, ""));
  EXPECT_FALSE(ours_accepts(v, ""));
}

// {m,n} with n < m makes libllama loop forever; such mutants are not sent to
// it. (A hand scan: <regex> trips GCC 12 warnings under the sanitizers.)
bool hangs_libllama(const std::string& g) {
  const auto skip = [&](size_t i) {
    while (i < g.size() && (g[i] == ' ' || g[i] == '\t')) ++i;
    return i;
  };
  const auto digits = [&](size_t i) {
    while (i < g.size() && g[i] >= '0' && g[i] <= '9') ++i;
    return i;
  };
  for (size_t open = g.find('{'); open != std::string::npos; open = g.find('{', open + 1)) {
    const size_t a0 = skip(open + 1), a1 = digits(a0);
    if (a1 == a0) continue;
    const size_t comma = skip(a1);
    if (comma >= g.size() || g[comma] != ',') continue;
    const size_t b0 = skip(comma + 1), b1 = digits(b0);
    if (b1 == b0 || skip(b1) >= g.size() || g[skip(b1)] != '}') continue;
    const std::string a = g.substr(a0, a1 - a0), b = g.substr(b0, b1 - b0);
    if (a.size() > 9 || b.size() > 9 || std::stoll(b) < std::stoll(a)) return true;
  }
  return false;
}

TEST(GbnfParity, fuzzed_grammar_verdicts_match_libllama) {
  if (!have_shared()) GTEST_SKIP() << "../shared is absent";
  VocabPair& v = stories();
  const std::vector<std::string> seeds = {
      builtin_json_grammar(),
      "root ::= (expr \"=\" ws term \"\\n\")+\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ ws | \"(\" expr \")\"\n"
      "ws ::= [ \\t]*\n",
      "root ::= \"[\" item{1,3} (\",\" item){0,4} \"]\"\nitem ::= [a-c]{2,} | [0-9]{1,3} | \"x\"{3}\n",
      "root ::= ([α-ω]{1,4} | \"é\" | [^a-z\\x00-\\x1F])+ <s>? !<[5]>\n",
  };
  const std::string alphabet = "\"()[]{}|*+?.,^-\\:=#<>!\n 0123ab";
  std::mt19937 rng(1234);
  int compared = 0, accepted = 0;
  for (int i = 0; i < 400; ++i) {
    std::string g = seeds[i % seeds.size()];
    const int n_mut = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n_mut; ++k) {
      const size_t pos = rng() % (g.size() + 1);
      switch (rng() % 4) {
        case 0:
          if (pos < g.size()) g.erase(pos, 1);
          break;
        case 1:
          g.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        case 2:
          if (pos < g.size()) g[pos] = alphabet[rng() % alphabet.size()];
          break;
        default: {
          const size_t len = rng() % 8;
          if (pos + len <= g.size()) g.insert(pos, g.substr(pos, len));
        }
      }
    }
    if (hangs_libllama(g)) continue;
    const bool ours = ours_accepts(v, g);
    EXPECT_EQ(ours, ref_accepts(v, g)) << g;
    ++compared;
    accepted += ours ? 1 : 0;
  }
  EXPECT_GE(compared, 350);
  // both verdicts occur
  EXPECT_GT(accepted, 20);
  EXPECT_LT(accepted, compared - 20);
}

}  // namespace
}  // namespace strix::grammar::test
