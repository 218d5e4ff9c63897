// llama-server's --context-shift in the Engine, in-process on stories260K. A
// greedy request generates far past a small n_ctx: before its next token would
// take the last cell, the engine keeps n_keep cells (+1 for the BOS), drops
// n_discard after them and moves the rest down (Context::seq_cut).
// Reference: libllama running llama-server's loop (the same trigger,
// llama_memory_seq_rm + llama_memory_seq_add) and greedy decoding; the engine's
// reply must be its tokens. Controls: the runner-up taken once after the
// shifts gives another text, and so does libllama with no shift at all (so a
// shift did happen and mattered). Also: with the shift off the request ends
// at the context with truncated set; a slot preempted after a shift resumes
// from the cells the shift kept; the server refuses nothing it accepts.
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/engine_harness.h"
#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "sampling/sampler.h"
#include "server/engine.h"
#include "server/server_process.h"
#include "tokenizer/tokenizer.h"
#include "tools/parity.h"

namespace {

using strix::server::Engine;
using strix::server::Finish;
using strix::server::GenEvent;
using strix::server::GenRequest;
using strix::server::GenStream;

const server_test::StoriesEngineModel* fx() { return &server_test::stories_engine_model(); }

GenRequest request(const std::vector<int32_t>& prompt, int n, std::optional<int32_t> n_keep, int32_t n_discard = 0) {
  GenRequest r = strix::test::greedy_request(*fx()->tk, prompt, n);
  r.n_keep = n_keep;
  r.n_discard = n_discard;
  return r;
}

std::shared_ptr<GenStream> submit(Engine& engine, const std::vector<int32_t>& prompt, int n,
                                  std::optional<int32_t> n_keep, int32_t n_discard = 0) {
  return engine.submit(request(prompt, n, n_keep, n_discard));
}

using strix::test::wait_done;
using Shift = strix::test::RefGreedy;

// libllama: greedy n tokens after `prompt` under llama-server's loop; the text.
std::string ref_greedy(const std::vector<int32_t>& prompt, int n, Shift sh, int swap_at = -1) {
  sh.swap_at = swap_at;
  return strix::test::ref_greedy_text(*fx()->ref, prompt, n, sh);
}

std::vector<int32_t> prompt_of(int n, uint64_t seed) {
  std::vector<int32_t> p = {fx()->ref->bos()};
  const auto r = strix::parity_tokens(fx()->model->hparams().n_vocab, -1, n, seed);
  p.insert(p.end(), r.begin(), r.end());
  return p;
}

class ContextShiftTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  }
  std::unique_ptr<strix::Context> ctx_;
  std::unique_ptr<Engine> engine_;
  void start(int64_t n_ctx, bool shift, int n_parallel = 1, int32_t n_keep = 0) {
    ctx_ = std::make_unique<strix::Context>(
        *fx()->model, strix::ContextOptions{.n_ctx = n_ctx, .n_ubatch = 512, .n_threads = 1, .n_seq_max = n_parallel});
    engine_ = std::make_unique<Engine>(*ctx_, *fx()->tk,
                                       Engine::Options{.n_parallel = n_parallel, .ctx_shift = shift, .n_keep = n_keep});
  }
  void TearDown() override {
    if (engine_) engine_->stop();
  }
};

TEST_F(ContextShiftTest, generation_past_the_context_gives_libllamas_tokens) {
  constexpr int kCtx = 64, kGen = 150;
  const auto prompt = prompt_of(20, 31);
  start(kCtx, true);
  const auto [e, text] = wait_done(submit(*engine_, prompt, kGen, 5));
  ASSERT_TRUE(e.done) << e.error;
  EXPECT_EQ(e.finish, Finish::kLimit);
  EXPECT_EQ(e.n_gen, kGen);
  EXPECT_TRUE(e.truncated);
  EXPECT_LT(ctx_->seq_len(0), kCtx);
  const Shift sh{.shift_ctx = kCtx, .n_keep = 5};
  EXPECT_EQ(text, ref_greedy(prompt, kGen, sh));
  // controls: the runner-up once after the shifts, and no shift at all
  EXPECT_NE(text, ref_greedy(prompt, kGen, sh, /*swap_at=*/120));
  EXPECT_NE(text, ref_greedy(prompt, kGen, Shift{}));
}

TEST_F(ContextShiftTest, n_keep_and_n_discard_of_the_request) {
  constexpr int kCtx = 64, kGen = 120;
  const auto prompt = prompt_of(12, 32);
  start(kCtx, true, 1, /*n_keep=*/3);
  // the whole prompt kept, 9 cells dropped per shift
  const auto [e, text] = wait_done(submit(*engine_, prompt, kGen, -1, 9));
  ASSERT_TRUE(e.done) << e.error;
  EXPECT_EQ(e.n_gen, kGen);
  EXPECT_EQ(text, ref_greedy(prompt, kGen, Shift{.shift_ctx = kCtx, .n_keep = -1, .n_discard = 9}));
  EXPECT_NE(text, ref_greedy(prompt, kGen, Shift{.shift_ctx = kCtx, .n_keep = -1}));
  // no n_keep in the request: the server's --keep
  const auto [e2, text2] = wait_done(submit(*engine_, prompt, kGen, std::nullopt));
  ASSERT_TRUE(e2.done) << e2.error;
  EXPECT_EQ(text2, ref_greedy(prompt, kGen, Shift{.shift_ctx = kCtx, .n_keep = 3}));
  EXPECT_NE(text2, text);
}

TEST_F(ContextShiftTest, off_ends_at_the_context_truncated) {
  constexpr int kCtx = 64;
  const auto prompt = prompt_of(20, 31);
  start(kCtx, false);
  const auto [e, text] = wait_done(submit(*engine_, prompt, 150, 5));
  ASSERT_TRUE(e.done) << e.error;
  EXPECT_EQ(e.finish, Finish::kLimit);
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.n_gen, kCtx - static_cast<int>(prompt.size()) + 1);  // every cell, and the token sampled last
  EXPECT_EQ(text, ref_greedy(prompt, e.n_gen, Shift{}));
  // a request that ends before the context fills is not truncated
  const auto [e2, text2] = wait_done(submit(*engine_, prompt, 8, 5));
  EXPECT_FALSE(e2.truncated);
}

// Two slots in a cache of three blocks (n_ctx 65: a shift keeps a sequence
// within two), both requests admitted in one step. B, the younger, fills its
// two blocks with its prompt and shifts at its first token; when A needs a
// second block, B is preempted, resumes from the cells its shift kept
// (recomputed) and shifts again later.
TEST_F(ContextShiftTest, preempted_after_a_shift_resumes_from_the_kept_cells) {
  constexpr int kCtx = 65;
  const auto pa = prompt_of(4, 33), pb = prompt_of(63, 34);
  start(kCtx, true, 2);
  std::vector<GenRequest> both;
  both.push_back(request(pa, 40, 0));
  both.push_back(request(pb, 100, 4));
  const auto streams = engine_->submit_all(std::move(both));
  const auto [ea, ta] = wait_done(streams[0]);
  const auto [eb, tb] = wait_done(streams[1]);
  ASSERT_TRUE(ea.done && eb.done) << ea.error << eb.error;
  EXPECT_GE(engine_->metrics().preemptions, 1u);
  EXPECT_FALSE(ea.truncated);
  EXPECT_TRUE(eb.truncated);
  EXPECT_EQ(ta, ref_greedy(pa, 40, Shift{}));
  EXPECT_EQ(tb, ref_greedy(pb, 100, Shift{.shift_ctx = kCtx, .n_keep = 4}));
  EXPECT_NE(tb, ref_greedy(pb, 100, Shift{.shift_ctx = kCtx, .n_keep = 4}, /*swap_at=*/60));
}

// The same through `strix serve --context-shift --keep 3` and /completion:
// libllama's tokens, truncated set; bad n_keep / n_discard are refused by name.
TEST(ServeContextShift, completion_past_the_context) {
  if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  server_test::Server s({"-m", server_test::stories_model(), "-t", "1", "-c", "64", "--context-shift", "--keep", "3"});
  ASSERT_TRUE(s.ok()) << s.log();
  const auto prompt = prompt_of(20, 35);
  const std::string script = R"(
    const [url, ids] = process.argv.slice(1);
    const post = async (extra) => {
      const r = await fetch(url + '/completion', {method: 'POST', headers: {'content-type': 'application/json'},
        body: JSON.stringify({prompt: JSON.parse(ids), n_predict: 100, temperature: 0, ignore_eos: true, ...extra})});
      return {status: r.status, body: await r.json()};
    };
    console.log(JSON.stringify([await post({n_keep: 6}), await post({}), await post({n_keep: -2}),
                                await post({n_discard: -1})]));)";
  const nlohmann::json ids = prompt;
  const server_test::Result r =
      server_test::run("node", {"--input-type=module", "-e", script, s.url(), ids.dump()}, {}, 120);
  ASSERT_EQ(r.code, 0) << r.out << r.err << "\nserver log:\n" << s.log();
  const nlohmann::json o = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(o.is_array() && o.size() == 4) << r.out;
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json& b = o[i]["body"];
    EXPECT_EQ(o[i]["status"], 200) << b.dump();
    EXPECT_EQ(b.value("tokens_predicted", 0), 100) << b.dump();
    EXPECT_TRUE(b.value("truncated", false)) << b.dump();
    EXPECT_EQ(b.value("content", ""), ref_greedy(prompt, 100, Shift{.shift_ctx = 64, .n_keep = i == 0 ? 6 : 3}))
        << "request " << i;
  }
  EXPECT_NE(o[0]["body"].value("content", ""), o[1]["body"].value("content", ""));
  for (int i = 2; i < 4; ++i) {
    EXPECT_EQ(o[i]["status"], 400) << o[i].dump();
    EXPECT_NE(o[i]["body"].dump().find(i == 2 ? "n_keep" : "n_discard"), std::string::npos) << o[i].dump();
  }
}

}  // namespace
