// `strix serve` as a subprocess on the real stories260K model, driven by the
// official `openai` and `@anthropic-ai/sdk` npm packages
// (tests/server/openai_client.mjs, anthropic_client.mjs): greedy chat,
// streamed chat, completions, Responses, Anthropic Messages and the native
// endpoints against libllama's greedy tokens (src/ref, the independent
// reference, with a one-token-off negative control), logprobs against
// libllama's log-softmax, json_schema output validated by ajv, OpenAI- and
// Anthropic-shaped errors, 8 concurrent streams, a client that disconnects
// mid-stream, --timeout, flags and a clean SIGTERM shutdown.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/source_dir.h"
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

using server_test::ref_greedy;

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
                                       "200000", "--metrics", "--reasoning-format", "auto"});
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
                     const std::vector<std::pair<std::string, std::string>>& env = {},
                     const std::string& script = "openai_client.mjs", const std::string& extra = "") {
    std::vector<std::string> args = {std::string(STRIX_SOURCE_DIR) + "/tests/server/" + script, mode, server_->url(),
                                     api_key, std::to_string(kN)};
    if (!extra.empty()) args.push_back(extra);
    const Result r = server_test::run("node", args, env, 120);
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
  // a text-part array is the message content (several parts: message_parts_test.cpp)
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
  EXPECT_EQ(n["stopped"].value("content", ""), e.text.substr(0, at));  // two stops, the second matched
  EXPECT_EQ(n["stopped"].value("stop_type", ""), "word");
  EXPECT_EQ(n["stopped"].value("stopping_word", ""), "girl");
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
  const json& u = r["made_up_field"];
  EXPECT_EQ(u.value("status", 0), 400);
  EXPECT_EQ(u.value("param", ""), "frobnicate");
  EXPECT_EQ(u.value("type", ""), "invalid_request_error");
  EXPECT_NE(u.value("message", "").find("frobnicate"), std::string::npos);
  EXPECT_EQ(r["n0"].value("status", 0), 400);
  EXPECT_EQ(r["n0"].value("param", ""), "n");
  EXPECT_EQ(r["echo_logprobs"].value("param", ""), "echo");
  EXPECT_EQ(r["best_of_stream"].value("param", ""), "best_of");
  EXPECT_EQ(r["bad_schema"].value("status", 0), 400);
  EXPECT_NE(r["bad_schema"].value("param", "").find("response_format"), std::string::npos) << r["bad_schema"];
  EXPECT_EQ(r["bad_grammar"].value("status", 0), 400);
  EXPECT_EQ(r["bad_grammar"]["body"]["error"].value("param", ""), "grammar");
  EXPECT_EQ(r["bad_message_field"].value("param", ""), "messages[0].audio");
  EXPECT_EQ(r["id_slot"]["body"]["error"].value("param", ""), "id_slot");
  EXPECT_EQ(r["prev_response"].value("status", 0), 400);
  EXPECT_EQ(r["prev_response"].value("param", ""), "previous_response_id");
  EXPECT_EQ(r["store"].value("param", ""), "store");
  EXPECT_EQ(r["hosted_tool"].value("param", ""), "tools[0].type");
  EXPECT_EQ(r["props_post"].value("status", 0), 403) << "POST /props needs --props";
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
  EXPECT_EQ(r["native_unknown"]["body"]["error"].value("param", ""), "input_prefix");
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

// libllama's log-softmax at each step of `gen` after `prompt`: the sampled
// token's log-probability and the runner-up's (the negative control).
struct RefLogprobs {
  std::vector<double> sampled, second;
};
RefLogprobs ref_logprobs(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt,
                         const std::vector<int32_t>& gen) {
  strix::ref::LlamaContext ctx(m, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  RefLogprobs out;
  for (int32_t t : gen) {
    const auto lg = ctx.logits(-1);
    double mx = -1e30;
    for (float x : lg) mx = std::max(mx, static_cast<double>(x));
    double sum = 0;
    for (float x : lg) sum += std::exp(static_cast<double>(x) - mx);
    const double lse = mx + std::log(sum);
    double second = -1e30;
    for (size_t v = 0; v < lg.size(); ++v) {
      if (static_cast<int32_t>(v) != t) second = std::max(second, static_cast<double>(lg[v]));
    }
    out.sampled.push_back(lg[t] - lse);
    out.second.push_back(second - lse);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return out;
}

TEST_F(ServeTest, logprobs_match_libllama_log_softmax) {
  const double kTol = 5e-3;
  const Expected e = expected(*model_, kChatText);
  const json r = client("logprobs");
  EXPECT_EQ(r.value("chat_content", ""), e.text);
  const json& chat = r["chat"];
  ASSERT_EQ(chat.size(), e.gen.size()) << r.dump();
  const RefLogprobs ref = ref_logprobs(*model_, e.prompt, e.gen);
  int control_differs = 0;
  for (size_t i = 0; i < e.gen.size(); ++i) {
    const double lp = chat[i]["logprob"].get<double>();
    EXPECT_EQ(chat[i].value("token", ""), model_->token_to_piece(e.gen[i], false)) << i;
    EXPECT_NEAR(lp, ref.sampled[i], kTol) << i;
    if (std::fabs(lp - ref.second[i]) > kTol) ++control_differs;
    ASSERT_EQ(chat[i]["top"].size(), 3u);
    EXPECT_NEAR(chat[i]["top"][0]["logprob"].get<double>(), lp, 1e-6) << "greedy: the top alternative is the token";
    EXPECT_NEAR(chat[i]["top"][1]["logprob"].get<double>(), ref.second[i], kTol) << i;
    EXPECT_GE(chat[i]["top"][1]["logprob"].get<double>(), chat[i]["top"][2]["logprob"].get<double>());
    std::vector<int> bytes;
    for (unsigned char c : chat[i].value("token", "")) bytes.push_back(c);
    EXPECT_EQ(chat[i]["bytes"].get<std::vector<int>>(), bytes);
  }
  EXPECT_GT(control_differs, 0) << "the runner-up's log-probability must not match (negative control)";
  EXPECT_EQ(r.value("stream_content", ""), e.text);
  ASSERT_EQ(r["streamed"].size(), e.gen.size());
  for (size_t i = 0; i < e.gen.size(); ++i) EXPECT_NEAR(r["streamed"][i].get<double>(), ref.sampled[i], kTol);

  const std::string prompt = "Once upon a time";
  const Expected ec = expected(*model_, prompt);
  const RefLogprobs rc = ref_logprobs(*model_, ec.prompt, ec.gen);
  const json& c = r["completion"];
  EXPECT_EQ(c.value("text", ""), ec.text);
  ASSERT_EQ(c["logprobs"].size(), ec.gen.size());
  size_t offset = 0;
  for (size_t i = 0; i < ec.gen.size(); ++i) {
    EXPECT_EQ(c["tokens"][i], model_->token_to_piece(ec.gen[i], false));
    EXPECT_NEAR(c["logprobs"][i].get<double>(), rc.sampled[i], kTol) << i;
    EXPECT_EQ(c["top"][i].size(), 2u);
    EXPECT_EQ(c["offsets"][i].get<size_t>(), offset);
    offset += c["tokens"][i].get<std::string>().size();
  }
  EXPECT_EQ(r.value("echo", ""), prompt + ec.text) << "echo: the prompt, then the completion";
  ASSERT_EQ(r["two"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r["two"][i].value("index", -1), i);
    EXPECT_EQ(r["two"][i].value("content", ""), e.text);
  }
  EXPECT_EQ(r["best"].value("n", 0), 1);
  const int billed = r["best"]["usage"].value("completion_tokens", 0);
  EXPECT_GT(billed, 8) << "best_of 3 generates (and bills) three candidates";
  EXPECT_LE(billed, 24);
  ASSERT_EQ(r["native"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r["native"][i].value("id", -1), ec.gen[i]);
    EXPECT_NEAR(r["native"][i]["logprob"].get<double>(), rc.sampled[i], kTol);
    EXPECT_EQ(r["native"][i]["top_logprobs"].size(), 2u);
  }
}

TEST_F(ServeTest, json_schema_and_grammar_constrain_the_output) {
  const json r = client("json_schema");
  EXPECT_TRUE(r.value("valid", false)) << r.value("text", "") << " " << r["errors"];
  EXPECT_EQ(r.value("finish", ""), "stop");
  EXPECT_TRUE(r.value("completions_valid", false)) << r.value("completions_text", "");
  const std::string g = r.value("grammar", "");
  EXPECT_TRUE(g == "yes!" || g == "no!") << g;
  EXPECT_FALSE(r.value("free_valid", true)) << "without a schema the reply is not such JSON (negative control)";
}

TEST_F(ServeTest, responses_api_matches_libllama_and_streams_its_events) {
  const Expected e = expected(*model_, kChatText);
  const json r = client("responses");
  EXPECT_EQ(r.value("text", ""), e.text);
  EXPECT_EQ(r.value("items_text", ""), e.text);
  EXPECT_EQ(r.value("stream_text", ""), e.text);
  EXPECT_EQ(r.value("done_text", ""), e.text);
  const bool full = static_cast<int>(e.gen.size()) == kN;
  EXPECT_EQ(r.value("status", ""), full ? "incomplete" : "completed");
  EXPECT_EQ(r["usage"].value("input_tokens", 0), static_cast<int>(e.prompt.size()));
  if (full) {
    EXPECT_EQ(r["usage"].value("output_tokens", 0), kN);
    EXPECT_EQ(r["incomplete"].value("reason", ""), "max_output_tokens");
  }
  std::vector<std::string> ev = r["events"].get<std::vector<std::string>>();
  ASSERT_GE(ev.size(), 9u) << r.dump();
  const std::vector<std::string> head = {"response.created", "response.in_progress", "response.output_item.added",
                                         "response.content_part.added"};
  EXPECT_EQ(std::vector<std::string>(ev.begin(), ev.begin() + 4), head);
  const std::vector<std::string> tail = {"response.output_text.done", "response.content_part.done",
                                         "response.output_item.done",
                                         full ? "response.incomplete" : "response.completed"};
  EXPECT_EQ(std::vector<std::string>(ev.end() - 4, ev.end()), tail);
  for (size_t i = 4; i + 4 < ev.size(); ++i) EXPECT_EQ(ev[i], "response.output_text.delta");
  EXPECT_EQ(r.value("final_status", ""), r.value("status", ""));
  // the same prompt ran before: its blocks come from the prefix cache
  EXPECT_GT(r["final_usage"]["input_tokens_details"].value("cached_tokens", 0), 0) << r["final_usage"];
  // the same counts as the non-streamed call, except what the cache served (that call may have run first)
  nlohmann::json a = r["final_usage"], b = r["usage"];
  a["input_tokens_details"].erase("cached_tokens");
  b["input_tokens_details"].erase("cached_tokens");
  EXPECT_EQ(a, b);
}

TEST_F(ServeTest, anthropic_messages_match_libllama_and_stream_in_order) {
  const Expected e = expected(*model_, kChatText);
  // a stop sequence from the middle of the greedy text (its first occurrence)
  std::string stop;
  size_t at = 0;
  for (size_t k = 3; k + 2 <= e.text.size(); ++k) {
    if (e.text.find(e.text.substr(k, 2)) == k) {
      stop = e.text.substr(k, 2);
      at = k;
      break;
    }
  }
  ASSERT_FALSE(stop.empty()) << e.text;
  const json r = client("messages", kApiKey, {}, "anthropic_client.mjs", stop);
  EXPECT_EQ(r.value("text", ""), e.text);
  EXPECT_NE(r.value("text", ""), e.broken);
  EXPECT_EQ(r.value("blocks_text", ""), e.text);
  EXPECT_EQ(r.value("type", ""), "message");
  EXPECT_EQ(r.value("role", ""), "assistant");
  const bool full = static_cast<int>(e.gen.size()) == kN;
  EXPECT_EQ(r.value("stop_reason", ""), full ? "max_tokens" : "end_turn");
  const json& u = r["usage"];
  EXPECT_EQ(u.value("input_tokens", 0) + u.value("cache_read_input_tokens", 0), static_cast<int>(e.prompt.size()));
  if (full) {
    EXPECT_EQ(u.value("output_tokens", 0), kN);
  }
  std::vector<std::string> ev;
  for (const auto& x : r["events"]) {
    if (x != "ping") ev.push_back(x);
  }
  ASSERT_GE(ev.size(), 5u) << r.dump();
  EXPECT_EQ(ev[0], "message_start");
  EXPECT_EQ(ev[1], "content_block_start");
  for (size_t i = 2; i + 3 < ev.size(); ++i) EXPECT_EQ(ev[i], "content_block_delta:text_delta");
  EXPECT_EQ(std::vector<std::string>(ev.end() - 3, ev.end()),
            (std::vector<std::string>{"content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(r.value("stream_text", ""), e.text);
  EXPECT_EQ(r.value("final_text", ""), e.text);
  EXPECT_EQ(r["final_usage"].value("output_tokens", 0), u.value("output_tokens", -1));
  EXPECT_EQ(r.value("final_stop", ""), r.value("stop_reason", ""));
  EXPECT_EQ(r["stopped"].value("text", ""), e.text.substr(0, at));
  EXPECT_EQ(r["stopped"].value("stop_reason", ""), "stop_sequence");
  EXPECT_EQ(r["stopped"].value("stop_sequence", ""), stop);
  EXPECT_EQ(r["stopped2"].value("text", ""), e.text.substr(0, at));
  EXPECT_EQ(r["stopped2"].value("stop_sequence", ""), stop);
  EXPECT_EQ(r.value("count", 0), static_cast<int>(e.prompt.size()));
}

TEST_F(ServeTest, anthropic_errors_have_anthropic_shape) {
  const json r = client("errors", kApiKey, {}, "anthropic_client.mjs");
  const auto check = [&](const char* key, int status, const char* type, const char* mention) {
    const json& x = r[key];
    EXPECT_EQ(x.value("status", 0), status) << key << ": " << x;
    const json body = x.contains("body") ? x["body"] : json();
    ASSERT_TRUE(body.is_object()) << key << ": " << x;
    EXPECT_EQ(body.value("type", ""), "error") << key;
    EXPECT_EQ(body["error"].value("type", ""), type) << key;
    EXPECT_NE(body["error"].value("message", "").find(mention), std::string::npos) << key << ": " << body;
  };
  check("no_max_tokens", 400, "invalid_request_error", "max_tokens");
  check("unknown", 400, "invalid_request_error", "frobnicate");
  check("bad_type", 400, "invalid_request_error", "temperature");
  check("image", 400, "invalid_request_error", "image");
  check("pdf", 400, "invalid_request_error", "document");
  check("doc_url", 400, "invalid_request_error", "document");
  check("doc_citations", 400, "invalid_request_error", "citations");
  check("image_in_result", 400, "invalid_request_error", "image");
  check("wrong_key", 401, "authentication_error", "API key");
  check("malformed", 400, "invalid_request_error", "JSON");
  check("oversized", 413, "request_too_large", "limit");
  EXPECT_EQ(r.value("bearer", 0), 200) << "Authorization: Bearer works on the Anthropic routes too";
}

// A plain-text document is text the model reads (docs/SERVER.md): its title
// and text as paragraphs of the user turn, before the turn's text block.
TEST_F(ServeTest, anthropic_text_documents_are_read_as_text) {
  const auto chat_text = [](const std::string& user) {
    return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n";
  };
  const Expected e = expected(*model_, chat_text("Story\n\nOnce upon a time\n\nHi"));
  // negative control: the blocks glued together without the paragraph breaks
  const Expected glued = expected(*model_, chat_text("StoryOnce upon a timeHi"));
  ASSERT_NE(e.prompt.size(), glued.prompt.size());
  const json r = client("documents", kApiKey, {}, "anthropic_client.mjs");
  EXPECT_EQ(r.value("text", ""), e.text);
  EXPECT_NE(r.value("text", ""), e.broken);
  EXPECT_EQ(r.value("count", 0), static_cast<int>(e.prompt.size()));
  EXPECT_NE(r.value("count", 0), static_cast<int>(glued.prompt.size()));
  EXPECT_EQ(r.value("content_doc", 0),
            static_cast<int>(model_->tokenize(chat_text("Read:\n\nNotes\n\nAB"), true, true).size()));
}

// Tools on a template without a tool-call format of its own (this ChatML one):
// llama.cpp's generic JSON format with minja's polyfills; a forced call comes
// back parsed (ajv checks its arguments), streamed fragments join to the same
// arguments, and tool_choice none is the plain greedy reply (no tools in the prompt).
TEST_F(ServeTest, tools_without_a_native_format_use_the_generic_one) {
  const Expected e = expected(*model_, kChatText);
  const json r = client("generic_tools");
  EXPECT_EQ(r.value("finish", ""), "tool_calls") << r.dump();
  EXPECT_TRUE(r["content"].is_null()) << r.dump();
  EXPECT_EQ(r.value("name", ""), "get_weather");
  EXPECT_TRUE(r.value("args_valid", false)) << r.value("args", "");
  EXPECT_EQ(r.value("stream_name", ""), "get_weather");
  EXPECT_EQ(r.value("stream_args", ""), r.value("args", "-"));
  const std::string prompt = r.value("prompt", "");
  EXPECT_EQ(prompt.rfind("<|im_start|>system\nRespond in JSON format, either with `tool_call`", 0), 0u) << prompt;
  // the tools as llama.cpp hands them over (type, function {name, description,
  // parameters}) in the request's key order, JSON indented by 2 as minja's polyfill writes them
  const nlohmann::ordered_json params = nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"unit": {"type": "string", "enum": ["c", "f"]},
          "city": {"type": "string", "enum": ["Paris", "Oslo"]}}, "required": ["unit", "city"],
          "additionalProperties": false})");
  const nlohmann::ordered_json tools = nlohmann::ordered_json::array(
      {{{"type", "function"},
        {"function", {{"name", "get_weather"}, {"description", "Weather"}, {"parameters", params}}}}});
  EXPECT_NE(prompt.find("You can call any of the following tools to satisfy the user's requests: " + tools.dump(2)),
            std::string::npos)
      << prompt;
  EXPECT_EQ(prompt.find(json(tools).dump(2)), std::string::npos) << "key-sorted tools (negative control)";
  EXPECT_EQ(r.value("args", "").rfind("{\"unit\":", 0), 0u) << r.value("args", "");
  EXPECT_EQ(r.value("prompt_tokens", 0), static_cast<int>(model_->tokenize(prompt, true, true).size()));
  EXPECT_EQ(r.value("none_content", ""), e.text);
  EXPECT_TRUE(r["none_calls"].is_null());
  const json a = client("generic_tools", kApiKey, {}, "anthropic_client.mjs");
  EXPECT_EQ(a.value("stop_reason", ""), "tool_use") << a.dump();
  EXPECT_EQ(a["types"], json::array({"tool_use"})) << a.dump();
  EXPECT_EQ(a.value("name", ""), "get_weather");
  EXPECT_TRUE(a.value("valid", false)) << a.dump();
}

TEST_F(ServeTest, metrics_slots_and_props) {
  const json r = client("endpoints");
  const std::string m = r.value("metrics", "");
  EXPECT_NE(m.find("# TYPE llamacpp:prompt_tokens_total counter"), std::string::npos) << m;
  EXPECT_NE(m.find("llamacpp:tokens_predicted_total "), std::string::npos) << m;
  EXPECT_NE(r.value("metrics_type", "").find("text/plain"), std::string::npos);
  ASSERT_TRUE(r["slots"].is_array()) << r["slots"];
  EXPECT_EQ(r["slots"].size(), 4u);
  EXPECT_EQ(r["props"].value("total_slots", 0), 4);
  EXPECT_EQ(r["props"].value("chat_template_tool_format", ""), "generic");
  EXPECT_EQ(r["props"].value("chat_template", ""), kTemplate);
}

// The server's greedy chat reply is what `strix run` prints for the rendered prompt.
TEST_F(ServeTest, greedy_chat_equals_the_cli) {
  const Result c = server_test::run(server_test::strix_binary(),
                                    {"run", "-m", server_test::stories_model(), "-p", kChatText, "-n",
                                     std::to_string(kN), "--temp", "0", "-no-cnv", "-t", "1", "--no-display-prompt"});
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string content = client("chat").value("content", "");
  EXPECT_FALSE(content.empty());
  // the CLI ends its output with "\n\n" (after " [end of text]\n" when the model ended it)
  EXPECT_TRUE(c.out == content + "\n\n" || c.out == content + " [end of text]\n\n\n")
      << "cli: [" << c.out << "] server: [" << content << "]";
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
// Negative control of the generic fallback: a template in a native llama.cpp
// format Strix does not implement (Command R7B's markers) still refuses tools
// by name, as llama-server would not give it the generic format.
TEST(Serve, tools_on_an_unimplemented_native_format_are_refused) {
  if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  const std::string tmpl = std::string(kTemplate) + "{# <|END_THINKING|><|START_ACTION|> #}";
  server_test::Server s({"-m", server_test::stories_model(), "-t", "1", "--chat-template", tmpl});
  ASSERT_TRUE(s.ok()) << s.log();
  const Result r = server_test::run(
      "node", {std::string(STRIX_SOURCE_DIR) + "/tests/server/openai_client.mjs", "tools_refused", s.url(), "none"}, {},
      60);
  ASSERT_EQ(r.code, 0) << r.out << r.err << s.log();
  const json j = json::parse(r.out);
  EXPECT_EQ(j.value("status", 0), 400) << j;
  EXPECT_EQ(j.value("param", ""), "tools") << j;
  EXPECT_NE(j.value("message", "").find("Command R7B"), std::string::npos) << j;
}

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
  for (const char* f : {"-m",
                        "-c",
                        "-np",
                        "--parallel",
                        "-b",
                        "-ub",
                        "-t",
                        "--host",
                        "--port",
                        "--api-key",
                        "--alias",
                        "--chat-template",
                        "--jinja",
                        "--timeout",
                        "--metrics",
                        "--slots",
                        "--no-slots",
                        "--props",
                        "--no-webui",
                        "--path",
                        "--hf-repo",
                        "--cont-batching",
                        "--cache-reuse",
                        "--context-shift",
                        "--no-context-shift",
                        "--keep",
                        "--ctx-checkpoints",
                        "--reasoning-format",
                        "--api-key-file",
                        "--body-limit",
                        "--chat-template-file"}) {
    EXPECT_NE(r.out.find(f), std::string::npos) << f;
  }
  // flags Strix does not implement are refused by name
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{{"-nocb", "x"},
                                                                                   {"--cache-reuse", "-1"},
                                                                                   {"--keep", "-2"},
                                                                                   {"--ctx-checkpoints", "-1"},
                                                                                   {"--reasoning-format", "x"}}) {
    r = server_test::run(server_test::strix_binary(), {"serve", "-m", "none.gguf", bad[0], bad[1]});
    EXPECT_EQ(r.code, 1) << bad[0];
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
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

// --timeout 1: a stream still running after a second ends with a "timed out"
// error and its slot is freed; then SIGTERM stops the server cleanly.
TEST(Serve, timeout_frees_the_slot_and_sigterm_stops_cleanly) {
  if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  server_test::Server s({"-m", server_test::stories_model(), "-t", "1", "-c", "32768", "--timeout", "1",
                         "--chat-template", "chatml", "--no-webui", "--no-slots"});
  ASSERT_TRUE(s.ok()) << s.log();
  const Result r = server_test::run(
      "node", {std::string(STRIX_SOURCE_DIR) + "/tests/server/openai_client.mjs", "timeout", s.url(), "none", "0"}, {},
      120);
  ASSERT_EQ(r.code, 0) << r.out << r.err << s.log();
  const json j = json::parse(r.out);
  EXPECT_NE(j.value("error", "").find("timed out"), std::string::npos) << j.dump();
  EXPECT_EQ(j["health"].value("slots_processing", -1), 0);
  EXPECT_LT(j.value("chunks", 0), 30000) << "the stream was cut before its end";
  EXPECT_EQ(j["slots"].value("status", 0), 501) << "--no-slots";
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
