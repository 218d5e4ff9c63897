// `strix serve` as a subprocess on the real stories260K model, driven by the
// official `openai` npm package (tests/server/openai_client.mjs): greedy chat,
// streamed chat, completions and the native endpoints against libllama's
// greedy tokens (src/ref, the independent reference, with a one-token-off
// negative control), OpenAI-shaped errors, 8 concurrent streams, a client that
// disconnects mid-stream, flags and a clean SIGTERM shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ref/libllama.h"
#include "server/server_process.h"

namespace {

using json = nlohmann::json;
using server_test::Result;

const char* kApiKey = "test-key-123";
const int kN = 16;  // tokens generated per request
// A ChatML template (stories260K has none), rendered as HF would.
const char* kTemplate =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
// What that template gives for [{"role": "user", "content": "Hi"}], written out by hand.
const char* kChatText = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";

// libllama's greedy continuation (argmax), at most n tokens, stopping before
// an end-of-generation token; swap_at: take the runner-up once (negative control).
std::vector<int32_t> ref_greedy(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                                int swap_at = -1) {
  strix::ref::LlamaContext ctx(m, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    const auto lg = ctx.logits(-1);
    std::vector<int32_t> order(lg.size());
    for (size_t v = 0; v < lg.size(); ++v) order[v] = static_cast<int32_t>(v);
    std::partial_sort(order.begin(), order.begin() + 2, order.end(),
                      [&](int32_t a, int32_t b) { return lg[a] > lg[b]; });
    const int32_t t = i == swap_at ? order[1] : order[0];
    if (m.is_eog(t)) break;
    out.push_back(t);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return out;
}

std::string pieces(const strix::ref::LlamaModel& m, const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t t : ids) s += m.token_to_piece(t, false);
  return s;
}

struct Expected {
  std::vector<int32_t> prompt, gen;
  std::string text, broken;
};

Expected expected(const strix::ref::LlamaModel& m, const std::string& prompt_text) {
  Expected e;
  e.prompt = m.tokenize(prompt_text, true, true);
  e.gen = ref_greedy(m, e.prompt, kN);
  e.text = pieces(m, e.gen);
  e.broken = pieces(m, ref_greedy(m, e.prompt, kN, /*swap_at=*/3));
  return e;
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (server_test::stories_model().empty()) return;
    server_ = new server_test::Server({"-m", server_test::stories_model(), "-np", "4", "-t", "1", "--api-key", kApiKey,
                                       "--alias", "stories", "--chat-template", kTemplate, "--jinja", "--body-limit",
                                       "200000"});
    model_ = new strix::ref::LlamaModel(server_test::stories_model());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
    ASSERT_TRUE(server_->ok()) << server_->log();
  }

  // Runs one mode of the node client; its JSON output.
  static json client(const std::string& mode, const std::string& api_key = kApiKey,
                     const std::vector<std::pair<std::string, std::string>>& env = {}) {
    const Result r = server_test::run("node",
                                      {std::string(STRIX_SOURCE_DIR) + "/tests/server/openai_client.mjs", mode,
                                       server_->url(), api_key, std::to_string(kN)},
                                      env, 120);
    EXPECT_EQ(r.code, 0) << mode << ": " << r.out << r.err << "\nserver log:\n" << server_->log();
    const json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? json::object() : j;
  }

  static server_test::Server* server_;
  static strix::ref::LlamaModel* model_;
};

server_test::Server* ServeTest::server_ = nullptr;
strix::ref::LlamaModel* ServeTest::model_ = nullptr;

TEST_F(ServeTest, chat_greedy_matches_libllama) {
  const Expected e = expected(*model_, kChatText);
  ASSERT_NE(e.text, e.broken) << "the negative control must differ";
  const json r = client("chat");
  EXPECT_EQ(r.value("content", ""), e.text);
  EXPECT_NE(r.value("content", ""), e.broken);
  EXPECT_EQ(r.value("role", ""), "assistant");
  EXPECT_EQ(r.value("object", ""), "chat.completion");
  const bool full = static_cast<int>(e.gen.size()) == kN;
  EXPECT_EQ(r.value("finish", ""), full ? "length" : "stop");
  EXPECT_EQ(r["usage"]["prompt_tokens"], e.prompt.size());
  if (full) {
    EXPECT_EQ(r["usage"]["completion_tokens"], kN);
  }
  EXPECT_EQ(r["usage"]["total_tokens"],
            r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());
  // text parts are joined into the message content
  EXPECT_EQ(client("chat_parts").value("content", ""), e.text);
}

TEST_F(ServeTest, streamed_chat_matches_libllama) {
  const Expected e = expected(*model_, kChatText);
  const json r = client("chat_stream");
  EXPECT_EQ(r.value("content", ""), e.text);
  EXPECT_NE(r.value("content", ""), e.broken);
  EXPECT_EQ(r.value("role", ""), "assistant");
  EXPECT_GT(r.value("chunks", 0), 3) << "the text arrives in pieces";
  ASSERT_TRUE(r["usage"].is_object()) << "stream_options.include_usage sends a usage chunk";
  EXPECT_EQ(r["usage"]["prompt_tokens"], e.prompt.size());
  if (static_cast<int>(e.gen.size()) == kN) {
    EXPECT_EQ(r["usage"]["completion_tokens"], kN);
    EXPECT_EQ(r.value("finish", ""), "length");
  }
}

TEST_F(ServeTest, completions_and_native_endpoints_match_libllama) {
  const std::string prompt = "Once upon a time";
  const Expected e = expected(*model_, prompt);
  ASSERT_NE(e.text, e.broken);
  const json r = client("completions");
  EXPECT_EQ(r.value("text", ""), e.text);
  EXPECT_NE(r.value("text", ""), e.broken);
  EXPECT_EQ(r.value("streamed", ""), e.text);
  EXPECT_EQ(r["usage"]["prompt_tokens"], e.prompt.size());
  // a stop string ends the text right before it
  const size_t at = e.text.find("girl");
  ASSERT_NE(at, std::string::npos) << "the greedy story mentions a girl: " << e.text;
  EXPECT_EQ(r.value("stopped", ""), e.text.substr(0, at));
  EXPECT_EQ(r.value("stopped_finish", ""), "stop");

  const json n = client("native");
  EXPECT_EQ(n.value("content", ""), e.text);
  EXPECT_EQ(n.value("stop_type", ""), static_cast<int>(e.gen.size()) == kN ? "limit" : "eos");
  // /tokenize: add_special false by default, as llama-server
  EXPECT_EQ(n["tokens"].get<std::vector<int32_t>>(), model_->tokenize(prompt, false, true));
  EXPECT_EQ(n.value("detok", ""), pieces(*model_, model_->tokenize(prompt, false, true)));
  EXPECT_EQ(n.value("prompt", ""), kChatText);
  const json st = client("native_stream");
  EXPECT_EQ(st.value("type", ""), "text/event-stream");
  EXPECT_EQ(st.value("content", ""), e.text);
  EXPECT_GT(st.value("n_events", 0), 3);
  EXPECT_EQ(st["last"].value("stop", false), true);
  EXPECT_EQ(st["last"].value("tokens_evaluated", 0), static_cast<int>(e.prompt.size()));
  EXPECT_EQ(n["models"], json::array({"stories"}));
}

TEST_F(ServeTest, errors_have_openai_shape_and_name_the_field) {
  const json r = client("errors", kApiKey, {{"LONG_WORDS", "5000"}});
  const json& u = r["unknown_field"];
  EXPECT_EQ(u.value("status", 0), 400);
  EXPECT_EQ(u.value("param", ""), "tools");
  EXPECT_EQ(u.value("type", ""), "invalid_request_error");
  EXPECT_NE(u.value("message", "").find("tools"), std::string::npos);
  EXPECT_EQ(r["made_up_field"].value("param", ""), "frobnicate");
  EXPECT_EQ(r["n2"].value("status", 0), 400);
  EXPECT_EQ(r["n2"].value("param", ""), "n");
  EXPECT_EQ(r["echo"].value("param", ""), "echo");
  EXPECT_EQ(r["bad_part"].value("status", 0), 400);
  EXPECT_EQ(r["bad_type"].value("param", ""), "temperature");
  EXPECT_EQ(r["long_prompt"].value("status", 0), 400);
  EXPECT_NE(r["long_prompt"].value("message", "").find("context"), std::string::npos);
  EXPECT_EQ(r["long_prompt"].value("code", ""), "context_length_exceeded");
  EXPECT_EQ(r["wrong_key"].value("status", 0), 401);
  EXPECT_EQ(r["wrong_key"].value("code", ""), "invalid_api_key");
  EXPECT_EQ(r["wrong_key_models"].value("status", 0), 401);
  EXPECT_EQ(r["malformed"].value("status", 0), 400);
  EXPECT_EQ(r["malformed"]["body"]["error"].value("type", ""), "invalid_request_error");
  EXPECT_EQ(r["not_found"].value("status", 0), 404);
  EXPECT_EQ(r["wrong_method"].value("status", 0), 405);
  EXPECT_EQ(r["preflight"].value("status", 0), 204);
  EXPECT_EQ(r["preflight"].value("cors", ""), "*");
  EXPECT_NE(r["preflight"].value("allow_methods", "").find("POST"), std::string::npos);
  EXPECT_EQ(r["not_found"].value("cors", ""), "*") << "every response carries CORS headers";
  EXPECT_EQ(r["oversized"].value("status", 0), 413);
  EXPECT_EQ(r["health"].value("status", 0), 200) << "/health needs no key";
  EXPECT_EQ(r["native_unknown"].value("status", 0), 400);
  EXPECT_EQ(r["native_unknown"]["body"]["error"].value("param", ""), "mirostat");
  EXPECT_EQ(r["bad_token"].value("status", 0), 400);
}

TEST_F(ServeTest, eight_concurrent_streams_give_the_single_greedy_text) {
  const Expected e = expected(*model_, kChatText);
  const json r = client("concurrent");
  ASSERT_EQ(r["contents"].size(), 8u);
  for (const auto& c : r["contents"]) EXPECT_EQ(c.get<std::string>(), e.text);
}

TEST_F(ServeTest, client_disconnect_cancels_and_the_server_keeps_serving) {
  const Expected e = expected(*model_, kChatText);
  const json r = client("disconnect");
  EXPECT_GT(r["health"].value("requests_cancelled", 0), r["before"].value("requests_cancelled", 0)) << r.dump();
  EXPECT_EQ(r["health"].value("slots_processing", -1), 0);
  EXPECT_EQ(r["after"].value("content", ""), e.text);
}

// Last in the suite: after everything above, SIGTERM ends the server cleanly
// (exit 0; under the sanitizers any report would have made that fail).
TEST_F(ServeTest, zz_sigterm_after_the_suite_exits_cleanly) {
  const int code = server_->stop();
  EXPECT_EQ(code, 0) << server_->log();
  EXPECT_EQ(server_->log().find("runtime error"), std::string::npos) << server_->log();
}

// -c is one KV pool shared by the slots: three unbounded requests fill it, the
// longest is ended ("length") to free blocks for the others, all stay greedy.
TEST(Serve, shared_context_full_ends_requests_with_length) {
  if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  server_test::Server s({"-m", server_test::stories_model(), "-t", "1", "-c", "96", "-np", "3"});
  ASSERT_TRUE(s.ok()) << s.log();
  const Result r = server_test::run(
      "node", {std::string(STRIX_SOURCE_DIR) + "/tests/server/openai_client.mjs", "fill", s.url(), "none", "0"}, {},
      120);
  ASSERT_EQ(r.code, 0) << r.out << r.err << s.log();
  const json j = json::parse(r.out);
  const strix::ref::LlamaModel m(server_test::stories_model());
  const auto prompt = m.tokenize("Once upon a time", true, true);
  const std::string greedy = pieces(m, ref_greedy(m, prompt, 97 - static_cast<int>(prompt.size())));
  int full = 0;
  for (int i = 0; i < 3; ++i) {
    const std::string text = j["texts"][i];
    EXPECT_EQ(greedy.compare(0, text.size(), text), 0) << "a prefix of the greedy text: " << text;
    EXPECT_LE(j["totals"][i].get<int>(), 97);
    if (j["finishes"][i] == "length") ++full;
  }
  EXPECT_GE(full, 1) << j.dump();
  // the last one fills all 96 cells, plus its final sampled token (which needs no cell)
  EXPECT_EQ(*std::max_element(j["totals"].begin(), j["totals"].end()), 97);
}

TEST(Serve, flags) {
  Result r = server_test::run(server_test::strix_binary(), {"serve", "-h"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* f : {"-m", "-c", "-np", "--parallel", "-b", "-ub", "-t", "--host", "--port", "--api-key", "--alias",
                        "--chat-template", "--jinja"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
  }
  r = server_test::run(server_test::strix_binary(), {"serve", "--frobnicate"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--frobnicate"), std::string::npos) << r.err;
  r = server_test::run(server_test::strix_binary(), {"serve", "--port", "http"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--port"), std::string::npos) << r.err;
  r = server_test::run(server_test::strix_binary(), {"serve"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("-m"), std::string::npos) << r.err;
}

TEST(Serve, sigterm_stops_cleanly) {
  if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  server_test::Server s({"-m", server_test::stories_model(), "-t", "1"});
  ASSERT_TRUE(s.ok()) << s.log();
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
