// cli::ChatHistory: built-in format names, enable_thinking and the closing of
// a think block the generation prompt opened (--reasoning-budget 0).
#include "cli/chat_history.h"

#include <gtest/gtest.h>

#include <string>

#include "ref/libllama.h"

namespace {

using strix::cli::ChatHistory;

const std::string kThinkTmpl =
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}A:{% if enable_thinking is defined %}[{{ enable_thinking }}]{% endif %}<think>\n"
    "{% endif %}";

TEST(CliChatHistory, thinking_off_closes_an_opened_think_block) {
  ChatHistory on(kThinkTmpl, "<s>", "</s>", "", /*enable_thinking=*/true);
  on.add("user", "hi");
  EXPECT_EQ(on.render(true), "user: hi\nA:[True]<think>\n");
  ChatHistory off(kThinkTmpl, "<s>", "</s>", "", /*enable_thinking=*/false);
  off.add("user", "hi");
  EXPECT_EQ(off.render(true), "user: hi\nA:[False]<think>\n</think>");
  EXPECT_EQ(off.render(false), "user: hi\n") << "nothing to close without the generation prompt";
  // the user's kwargs win over the budget
  ChatHistory kw(kThinkTmpl, "<s>", "</s>", R"({"enable_thinking": true})", /*enable_thinking=*/false);
  kw.add("user", "hi");
  EXPECT_EQ(kw.render(true), "user: hi\nA:[True]<think>\n");
}

TEST(CliChatHistory, builtin_name_renders_like_libllama_and_feeds_the_difference) {
  ChatHistory h("gemma", "<bos>", "<eos>", "");
  EXPECT_EQ(h.add_and_format("user", "Hello"), *strix::ref::chat_apply_template("gemma", {{"user", "Hello"}}, true));
  h.add("assistant", "Hi!");
  const std::string past = *strix::ref::chat_apply_template("gemma", {{"user", "Hello"}, {"assistant", "Hi!"}}, false);
  const std::string now =
      *strix::ref::chat_apply_template("gemma", {{"user", "Hello"}, {"assistant", "Hi!"}, {"user", "Again"}}, true);
  // common_chat_format_single: the new text, after a newline put back
  std::string want = "\n";  // (built up: "\n" + std::string trips GCC 12's -Wrestrict)
  want += now.substr(past.size());
  EXPECT_EQ(h.add_and_format("user", "Again"), want);
}

}  // namespace
