// `strix run --reasoning-budget N` end to end on the real stories260K model,
// with a chat template whose generation prompt opens a thinking block
// ("A <think>\n"): the reply must be libllama's own greedy tokens for N - 1
// steps (the "\n" after <think> already counts, as in llama.cpp), then the
// forced end tag (" </think>" as this vocabulary spells it, several tokens),
// then libllama's greedy continuation after it. Controls: without a budget the
// model never writes "</think>", and a different budget moves the tag.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli_process.h"
#include "ref/libllama.h"

namespace {

using cli_test::Result;

constexpr const char* kTemplate =
    "{% for m in messages %}{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}A <think>\n{% endif %}";

#define REQUIRE_MODEL() \
  if (cli_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent"

Result run_budget(const std::string& budget, int n, const std::string& message = "") {
  std::vector<std::string> a = {"run",
                                "-m",
                                cli_test::stories_model(),
                                "-t",
                                "1",
                                "--no-warmup",
                                "--chat-template",
                                kTemplate,
                                "-p",
                                "Hello",
                                "-st",
                                "-n",
                                std::to_string(n),
                                "--temp",
                                "0",
                                "--reasoning-budget",
                                budget};
  if (!message.empty()) {
    a.push_back("--reasoning-budget-message");
    a.push_back(message);
  }
  return cli_test::run(cli_test::strix_binary(), a);
}

// libllama: greedy for `think` steps, then the forced tokens, then greedy until n tokens in all (or an EOG).
std::string reference_reply(const strix::ref::LlamaModel& m, int think, const std::vector<int32_t>& forced, int n) {
  const std::vector<int32_t> prompt = m.tokenize("Hello\nA <think>\n", /*add_special=*/true, /*parse_special=*/true);
  strix::ref::LlamaContext ctx(m, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::string text;
  for (int i = 0; i < n; ++i) {
    int32_t t;
    if (i >= think && i < think + static_cast<int>(forced.size())) {
      t = forced[static_cast<size_t>(i - think)];
    } else {
      const auto lg = ctx.logits(-1);
      t = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
      if (m.is_eog(t)) break;
    }
    text += m.token_to_piece(t, false);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return text;
}

// The reply: what follows the echoed generation prompt.
std::string reply_of(const std::string& out) {
  const std::string open = "A <think>\n";
  const size_t at = out.find(open);
  return at == std::string::npos ? std::string() : out.substr(at + open.size());
}

std::string strip_leading_space(std::string s) { return !s.empty() && s[0] == ' ' ? s.substr(1) : s; }

TEST(CliReasoningBudget, forces_the_end_tag_after_n_thinking_tokens) {
  REQUIRE_MODEL();
  strix::ref::LlamaModel m(cli_test::stories_model(), {.vocab_only = false});
  const std::vector<int32_t> end_tag = m.tokenize("</think>", false, true);
  ASSERT_GT(end_tag.size(), 1u) << "the tag should take several tokens in this vocabulary";
  for (int budget : {2, 4}) {
    const Result r = run_budget(std::to_string(budget), 14);
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string got = reply_of(r.out);
    const std::string want = strip_leading_space(reference_reply(m, budget - 1, end_tag, 14));
    EXPECT_NE(want.find("</think>"), std::string::npos) << want;
    EXPECT_EQ(got.rfind(want, 0), 0u) << "budget " << budget << "\nwant: " << want << "\ngot:  " << got;
  }
  // with a message: it is forced before the tag
  const std::vector<int32_t> forced = m.tokenize(" Enough.</think>", false, true);
  const Result r = run_budget("3", 24, " Enough.");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string want = strip_leading_space(reference_reply(m, 2, forced, 24));
  EXPECT_NE(want.find("Enough.</think>"), std::string::npos) << want;
  EXPECT_EQ(reply_of(r.out).rfind(want, 0), 0u) << "want: " << want << "\ngot:  " << reply_of(r.out);
}

TEST(CliReasoningBudget, controls_unlimited_and_another_budget_differ) {
  REQUIRE_MODEL();
  const Result unlimited = run_budget("-1", 14);
  ASSERT_EQ(unlimited.code, 0) << unlimited.err;
  EXPECT_EQ(reply_of(unlimited.out).find("</think>"), std::string::npos) << "the model does not close it itself";
  const Result two = run_budget("2", 14), four = run_budget("4", 14);
  const size_t at2 = reply_of(two.out).find("</think>"), at4 = reply_of(four.out).find("</think>");
  EXPECT_NE(at2, std::string::npos);
  EXPECT_NE(at4, std::string::npos);
  EXPECT_NE(at2, at4);
  // without thinking tags in the template the flag is accepted and says it has no effect
  const Result plain =
      cli_test::run(cli_test::strix_binary(), {"run", "-m", cli_test::stories_model(), "-t", "1", "--no-warmup", "-p",
                                               "Hello", "-n", "2", "--temp", "0", "--reasoning-budget", "3"});
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.err.find("no effect"), std::string::npos) << plain.err;
}

}  // namespace
