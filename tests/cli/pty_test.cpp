// A conversation on a pseudo-terminal, as a person would hold it: libedit
// reads the lines, replies stream, Ctrl-C during a reply stops that reply
// (the program goes on), /exit ends it; Ctrl-C at the prompt ends it too.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_process.h"

namespace {

std::vector<std::string> chat_args(const std::vector<std::string>& more) {
  std::vector<std::string> a = {
      "run",     "-m", cli_test::stories_model(), "-t", "1", "--no-warmup", "--chat-template", "chatml", "--temp", "0",
      "--color", "off"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const std::vector<std::pair<std::string, std::string>> kEnv = {{"TERM", "dumb"}};

// Lets the program reach its line reader after the prompt shows (not a timing
// assertion: only keeps a control key from arriving before libedit reads).
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

TEST(CliPty, two_turns_ctrl_c_during_generation_then_exit) {
  if (cli_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  // --ignore-eos and no -n: a reply only ends by Ctrl-C (or a full context),
  // so the Ctrl-C always lands during generation (32768 positions take seconds
  // even on a fast machine, so a loaded one cannot finish before the Ctrl-C).
  cli_test::Pty pty(cli_test::strix_binary(), chat_args({"-n", "-1", "--ignore-eos", "-c", "32768"}), kEnv);
  ASSERT_TRUE(pty.wait_for("\n> ", 0, 20000)) << pty.transcript();

  // turn 1: the reply streams until Ctrl-C (it would fill 4096 tokens otherwise)
  size_t mark = pty.transcript().size();
  settle();  // typed before libedit owns the terminal, the line would be echoed twice
  pty.send("Hello\r");
  ASSERT_TRUE(pty.wait_for("Hello", mark, 5000)) << "libedit echoes the typed line\n" << pty.transcript();
  size_t after_echo = pty.transcript().find("Hello", mark) + 5;
  // some reply text arrives while it is still generating
  ASSERT_TRUE(pty.wait_for(" ", after_echo + 4, 20000)) << pty.transcript();
  pty.send("\x03");
  ASSERT_TRUE(pty.wait_for("\n> ", after_echo, 20000)) << "Ctrl-C stops the reply, the prompt comes back\n"
                                                       << pty.transcript();
  const std::string reply1 =
      pty.transcript().substr(after_echo, pty.transcript().find("\n> ", after_echo) - after_echo);
  EXPECT_GT(reply1.size(), 8u) << "the reply streamed before Ctrl-C: '" << reply1 << "'";

  // turn 2: the program is still alive and answers again
  mark = pty.transcript().size();
  settle();
  pty.send("Tell me a story\r");
  ASSERT_TRUE(pty.wait_for("Tell me a story", mark, 5000)) << pty.transcript();
  after_echo = pty.transcript().find("Tell me a story", mark) + 15;
  ASSERT_TRUE(pty.wait_for(" ", after_echo + 4, 20000)) << pty.transcript();
  pty.send("\x03");
  ASSERT_TRUE(pty.wait_for("\n> ", after_echo, 20000)) << pty.transcript();

  // /exit ends the program normally, with the timing summary
  pty.send("/exit\r");
  EXPECT_EQ(pty.wait_exit(20000), 0) << pty.transcript();
  EXPECT_NE(pty.transcript().find("llama_perf_context_print:       total time ="), std::string::npos)
      << pty.transcript();
}

TEST(CliPty, ctrl_c_and_ctrl_d_at_the_prompt_end_the_program) {
  if (cli_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  {
    cli_test::Pty pty(cli_test::strix_binary(), chat_args({"-n", "4"}), kEnv);
    ASSERT_TRUE(pty.wait_for("\n> ", 0, 20000)) << pty.transcript();
    settle();  // the prompt is printed just before libedit takes the terminal
    pty.send("\x03");
    EXPECT_EQ(pty.wait_exit(20000), 130) << pty.transcript();
  }
  {
    cli_test::Pty pty(cli_test::strix_binary(), chat_args({"-n", "4"}), kEnv);
    ASSERT_TRUE(pty.wait_for("\n> ", 0, 20000)) << pty.transcript();
    settle();
    pty.send("\x04");
    EXPECT_EQ(pty.wait_exit(20000), 0) << pty.transcript();
  }
}

TEST(CliPty, single_turn_with_a_prompt_does_not_wait_for_input) {
  if (cli_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  cli_test::Pty pty(cli_test::strix_binary(), chat_args({"-n", "8", "-st", "-p", "Hi", "-sys", "Be kind."}), kEnv);
  EXPECT_EQ(pty.wait_exit(20000), 0) << pty.transcript();
  // the rendered prompt is echoed (stories260K has no chatml special tokens, so the markers show as text)
  EXPECT_NE(pty.transcript().find("system"), std::string::npos) << pty.transcript();
  EXPECT_NE(pty.transcript().find("Be kind."), std::string::npos) << pty.transcript();
  EXPECT_EQ(pty.transcript().find("\n> "), std::string::npos) << "no input prompt with -st -p\n" << pty.transcript();
}

}  // namespace
