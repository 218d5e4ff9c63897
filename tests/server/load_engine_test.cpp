// The server's Engine in-process on the real stories260K model: prefix caching
// across requests, across turns of a chat and between n identical prompts
// admitted together; logprobs against libllama's logits (src/ref, the
// independent reference) with a one-step-off negative control; cancellation,
// deadlines and preemption on a tiny KV cache, every block back in the pool
// afterwards; the metrics / slots / props reports. Greedy outputs are compared
// with libllama's greedy tokens on the same ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "models/model.h"
#include "ref/libllama.h"
#include "runtime/context.h"
#include "sampling/sampler.h"
#include "server/engine.h"
#include "server/server_process.h"
#include "tokenizer/tokenizer.h"

namespace {

using strix::server::Engine;
using strix::server::Finish;
using strix::server::GenEvent;
using strix::server::GenRequest;
using strix::server::GenStream;

// Everything a stream delivered, once it is done.
struct Outcome {
  std::string text;
  std::vector<GenEvent> events;
  GenEvent last;
};

Outcome wait_done(const std::shared_ptr<GenStream>& s) {
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  s->set_notify([&] {
    std::lock_guard<std::mutex> lock(mu);
    ready = true;
    cv.notify_one();
  });
  Outcome o;
  for (;;) {
    for (GenEvent& e : s->take()) {
      o.text += e.text;
      o.events.push_back(e);
      if (e.done) {
        o.last = e;
        s->set_notify(nullptr);
        return o;
      }
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return ready; });
    ready = false;
  }
}

const server_test::StoriesEngineModel* fx() { return &server_test::stories_engine_model(); }

// An engine over its own context.
struct Server {
  std::unique_ptr<strix::Context> ctx;
  std::unique_ptr<Engine> engine;
  Server(int64_t n_ctx, int np, int32_t n_batch = 2048, double timeout_s = 0) {
    ctx = std::make_unique<strix::Context>(
        *fx()->model, strix::ContextOptions{.n_ctx = n_ctx, .n_ubatch = 512, .n_threads = 2, .n_seq_max = np});
    engine = std::make_unique<Engine>(*ctx, *fx()->tk,
                                      Engine::Options{.n_parallel = np, .n_batch = n_batch, .timeout_s = timeout_s});
  }
};

GenRequest greedy(const std::vector<int32_t>& prompt, int32_t n_predict, bool ignore_eos = false) {
  GenRequest r;
  r.prompt = prompt;
  strix::sampling::Params p;
  p.temp = 0.0f;
  p.ignore_eos = ignore_eos;
  r.sampler = std::make_unique<strix::sampling::Sampler>(p, *fx()->tk, 4096);
  r.n_predict = n_predict;
  return r;
}

std::vector<int32_t> tokens(const std::string& text) { return fx()->tk->tokenize(text, true, false); }

// libllama's greedy continuation (argmax, stopping before an end-of-generation token) as text.
std::string ref_greedy(const std::vector<int32_t>& prompt, int n) {
  strix::ref::LlamaContext ctx(*fx()->ref, {.n_ctx = 1024, .n_batch = 1024, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::string out;
  for (int i = 0; i < n; ++i) {
    const auto lg = ctx.logits(-1);
    const int32_t t = static_cast<int32_t>(std::max_element(lg.begin(), lg.end()) - lg.begin());
    if (fx()->ref->is_eog(t)) break;
    out += fx()->ref->token_to_piece(t, false);
    const int32_t one[1] = {t};
    ctx.decode_seq(one, pos++);
  }
  return out;
}

// Blocks held by requests, after the engine went idle.
int64_t used_blocks_when_idle(Engine& e) {
  for (int i = 0; i < 2000; ++i) {
    const Engine::Metrics m = e.metrics();
    if (m.processing == 0 && m.deferred == 0) return m.kv_blocks_used;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

const char* kStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she saw a "
    "big red ball in the park. She ran to the ball and kicked it very hard. The ball went up into the sky and came "
    "down near a tree. Lily was happy and she laughed with her mom.";

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
  }
};

TEST_F(EngineTest, SecondRequestReusesTheCachedPrefixWithTheSameOutput) {
  Server s(1024, 2);
  const auto prompt = tokens(kStory);
  ASSERT_GT(prompt.size(), 64u);
  const std::string want = ref_greedy(prompt, 12);
  const Outcome a = wait_done(s.engine->submit(greedy(prompt, 12)));
  EXPECT_EQ(a.last.n_cached, 0);
  EXPECT_EQ(a.text, want);
  const Outcome b = wait_done(s.engine->submit(greedy(prompt, 12)));
  const int32_t whole = static_cast<int32_t>(prompt.size()) / 32 * 32;
  EXPECT_EQ(b.last.n_cached, whole == static_cast<int32_t>(prompt.size()) ? whole - 1 : whole);
  EXPECT_EQ(b.text, want);
  // a prompt that shares the first blocks only
  auto c_prompt = prompt;
  c_prompt[40] = tokens(" dog").back();
  const Outcome c = wait_done(s.engine->submit(greedy(c_prompt, 12)));
  EXPECT_EQ(c.last.n_cached, 32);
  EXPECT_EQ(c.text, ref_greedy(c_prompt, 12));
  // cache_prompt = false and another salt never share
  GenRequest d = greedy(prompt, 12);
  d.cache_prompt = false;
  const Outcome dd = wait_done(s.engine->submit(std::move(d)));
  EXPECT_EQ(dd.last.n_cached, 0);
  EXPECT_EQ(dd.text, want);
  GenRequest e = greedy(prompt, 12);
  e.cache_salt = "another user";
  EXPECT_EQ(wait_done(s.engine->submit(std::move(e))).last.n_cached, 0);
  GenRequest f = greedy(prompt, 12);
  f.cache_salt = "another user";
  EXPECT_GT(wait_done(s.engine->submit(std::move(f))).last.n_cached, 0);  // its own salt does
  EXPECT_EQ(used_blocks_when_idle(*s.engine), 0);
  EXPECT_GT(s.engine->metrics().kv_blocks_cached, 0);
  EXPECT_GE(s.engine->metrics().prefix_hit_tokens, static_cast<uint64_t>(whole - 1 + 32));
}

TEST_F(EngineTest, TheNextTurnOfAChatReusesThePreviousTurn) {
  Server s(1024, 1);
  const auto p1 = tokens(kStory);
  GenRequest r1 = greedy(p1, 40, /*ignore_eos=*/true);
  r1.n_probs = 1;  // to learn the generated ids
  const Outcome t1 = wait_done(s.engine->submit(std::move(r1)));
  ASSERT_EQ(t1.last.finish, Finish::kLimit);
  std::vector<int32_t> held = p1;  // what turn 1 left in the cache: its prompt and all generated tokens but the last
  for (const GenEvent& e : t1.events) {
    for (const auto& p : e.probs) held.push_back(p.sampled.id);
  }
  ASSERT_EQ(held.size(), p1.size() + 40);
  held.pop_back();
  // turn 2: the first prompt, the reply and more text, tokenized again
  const auto p2 = tokens(std::string(kStory) + t1.text + " Then");
  const size_t n = std::min(held.size(), p2.size());
  const int32_t common =
      static_cast<int32_t>(std::mismatch(held.begin(), held.begin() + n, p2.begin()).first - held.begin());
  ASSERT_GT(common / 32 * 32, static_cast<int32_t>(p1.size()) / 32 * 32) << "the reply must fill a block of its own";
  const Outcome t2 = wait_done(s.engine->submit(greedy(p2, 8)));
  EXPECT_EQ(t2.last.n_cached, common / 32 * 32);
  EXPECT_EQ(t2.text, ref_greedy(p2, 8));
}

TEST_F(EngineTest, IdenticalPromptsSubmittedTogetherComputeThePromptOnce) {
  Server s(2048, 4);
  const auto prompt = tokens(std::string(kStory) + " " + kStory);
  ASSERT_GT(prompt.size(), 150u);
  const std::string want = ref_greedy(prompt, 6);
  std::vector<std::shared_ptr<GenStream>> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(s.engine->submit(greedy(prompt, 6)));
  int fresh = 0;
  for (auto& st : streams) {
    const Outcome o = wait_done(st);
    EXPECT_EQ(o.text, want);
    if (o.last.n_cached == 0) {
      ++fresh;
    } else {
      EXPECT_GE(o.last.n_cached, static_cast<int32_t>(0.9 * static_cast<double>(prompt.size())));
      // all but the last token, whose logits each request computes (its partly filled block shared, then copied)
      EXPECT_EQ(o.last.n_cached, static_cast<int32_t>(prompt.size()) - 1);
    }
  }
  EXPECT_EQ(fresh, 1);
  // prompt tokens computed: one prompt, then one token for each of the others
  EXPECT_EQ(s.engine->metrics().prompt_tokens, prompt.size() + 3);
  EXPECT_EQ(used_blocks_when_idle(*s.engine), 0);
}

TEST_F(EngineTest, LogprobsAreTheLogSoftmaxOfLibllamasLogits) {
  Server s(1024, 1);
  const auto prompt = tokens("Once upon a time, there was a");
  GenRequest r = greedy(prompt, 6);
  r.n_probs = 4;
  const Outcome o = wait_done(s.engine->submit(std::move(r)));
  std::vector<strix::server::TokenLogprobs> got;
  std::string pieces;
  for (const GenEvent& e : o.events) {
    for (const auto& p : e.probs) {
      got.push_back(p);
      pieces += fx()->tk->token_to_piece(p.sampled.id, false);
    }
  }
  ASSERT_EQ(static_cast<int32_t>(got.size()), o.last.n_gen - (o.last.finish == Finish::kEos ? 1 : 0));
  EXPECT_EQ(pieces, o.text);
  // libllama, step by step on the same ids; log-softmax in double here
  strix::ref::LlamaContext ctx(*fx()->ref, {.n_ctx = 512, .n_batch = 512, .n_ubatch = 512, .n_threads = 1});
  ctx.decode_seq(prompt, 0);
  int32_t pos = static_cast<int32_t>(prompt.size());
  std::vector<std::vector<double>> ref_lp;
  for (const auto& g : got) {
    const auto lg = ctx.logits(-1);
    double mx = -INFINITY, sum = 0;
    for (float v : lg) mx = std::max(mx, static_cast<double>(v));
    for (float v : lg) sum += std::exp(v - mx);
    std::vector<double> lp(lg.size());
    for (size_t i = 0; i < lg.size(); ++i) lp[i] = lg[i] - mx - std::log(sum);
    ref_lp.push_back(lp);
    const int32_t one[1] = {g.sampled.id};
    ctx.decode_seq(one, pos++);
  }
  auto matches = [&](size_t step, const strix::server::TokenLogprobs& g) {
    const auto& lp = ref_lp[step];
    if (std::abs(g.sampled.logprob - lp[g.sampled.id]) > 1e-4) return false;
    std::vector<int32_t> order(lp.size());
    for (size_t i = 0; i < lp.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return lp[a] > lp[b]; });
    if (g.top.size() != 4) return false;
    for (size_t k = 0; k < 4; ++k) {
      if (g.top[k].id != order[k] || std::abs(g.top[k].logprob - lp[order[k]]) > 1e-4) return false;
    }
    return true;
  };
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(matches(i, got[i])) << "step " << i;
    EXPECT_EQ(got[i].top[0].id, got[i].sampled.id);  // greedy
    EXPECT_EQ(got[i].top[0].piece, fx()->tk->token_to_piece(got[i].top[0].id, true));
  }
  // negative control: each step's probabilities against the reference's next step
  int off = 0;
  for (size_t i = 0; i + 1 < got.size(); ++i) off += !matches(i + 1, got[i]);
  EXPECT_GT(off, 0);
  // n_probs = 0: no probabilities
  const Outcome none = wait_done(s.engine->submit(greedy(prompt, 3)));
  for (const GenEvent& e : none.events) EXPECT_TRUE(e.probs.empty());
}

TEST_F(EngineTest, CancelAndDeadlineFreeTheBlocksAtOnce) {
  Server s(1024, 2);
  const auto prompt = tokens(kStory);
  // a queued request past its deadline: the only slot is busy
  Server one(1024, 1);
  auto busy = one.engine->submit(greedy(prompt, 200));
  GenRequest late = greedy(prompt, 4);
  late.timeout_ms = 1;
  const Outcome l = wait_done(one.engine->submit(std::move(late)));
  EXPECT_EQ(l.last.finish, Finish::kError);
  EXPECT_NE(l.last.error.find("timed out"), std::string::npos) << l.last.error;
  busy->cancel();
  const Outcome b = wait_done(busy);
  EXPECT_TRUE(b.last.finish == Finish::kError || b.last.finish == Finish::kLimit || b.last.finish == Finish::kEos);
  EXPECT_EQ(used_blocks_when_idle(*one.engine), 0);
  // a running request cancelled after its first text
  GenRequest r = greedy(prompt, 100000, /*ignore_eos=*/true);
  auto st = s.engine->submit(std::move(r));
  for (;;) {
    const auto ev = st->take();
    if (!ev.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  st->cancel();
  const Outcome c = wait_done(st);
  EXPECT_EQ(c.last.finish, Finish::kError);
  EXPECT_EQ(c.last.error, "cancelled");
  EXPECT_EQ(used_blocks_when_idle(*s.engine), 0);
  EXPECT_GT(s.engine->metrics().kv_blocks_cached, 0);  // the prompt's full blocks stay cached
  EXPECT_EQ(s.engine->metrics().cancelled, 1u);
  // a running request past its deadline (the engine-wide default)
  Server t(1024, 1, 2048, /*timeout_s=*/0.05);
  GenRequest longer = greedy(prompt, 100000, /*ignore_eos=*/true);
  const Outcome d = wait_done(t.engine->submit(std::move(longer)));
  EXPECT_EQ(d.last.finish, Finish::kError);
  EXPECT_NE(d.last.error.find("timed out"), std::string::npos) << d.last.error;
  EXPECT_EQ(used_blocks_when_idle(*t.engine), 0);
  EXPECT_EQ(t.engine->metrics().timeouts, 1u);
}

TEST_F(EngineTest, ATinyCacheWaitsOrPreemptsAndNeverGarbles) {
  // 5 blocks of 32 cells for three requests that each need 3 blocks to finish
  Server s(160, 3);
  const std::vector<std::string> texts = {"Once upon a time, there was a little girl named Lily. She loved",
                                          "Tom and Sam were friends. They liked to play with a big red ball",
                                          "One day, a little bird flew over the tree and saw a cat. The cat"};
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::shared_ptr<GenStream>> streams;
  for (const auto& t : texts) {
    prompts.push_back(tokens(t));
    ASSERT_LT(prompts.back().size(), 30u);
    streams.push_back(s.engine->submit(greedy(prompts.back(), 50)));
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    const Outcome o = wait_done(streams[i]);
    EXPECT_NE(o.last.finish, Finish::kError) << o.last.error;
    EXPECT_EQ(o.text, ref_greedy(prompts[i], 50)) << "request " << i;
  }
  EXPECT_EQ(used_blocks_when_idle(*s.engine), 0);
  const Engine::Metrics m = s.engine->metrics();
  std::printf("    preemptions: %llu\n", static_cast<unsigned long long>(m.preemptions));
  EXPECT_GT(m.preemptions, 0u) << "three requests of 3 blocks each in 5 blocks must preempt";
}

TEST_F(EngineTest, SixtyFourConcurrentRequestsOnSixteenSlotsLeaveEveryBlockFree) {
  Server s(1024, 16);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::shared_ptr<GenStream>> streams;
    for (int i = 0; i < 64; ++i) {
      GenRequest r = greedy(tokens(std::string(kStory) + " Story " + std::to_string(round * 100 + i) + ":"), 4);
      if (i % 8 == 7) r.cache_salt = "other";
      streams.push_back(s.engine->submit(std::move(r)));
    }
    streams[5]->cancel();  // one client goes away
    int ended = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
      const Outcome o = wait_done(streams[i]);
      if (i == 5) {
        EXPECT_TRUE(o.last.finish != Finish::kError || o.last.error == "cancelled") << o.last.error;
      } else {
        EXPECT_NE(o.last.finish, Finish::kError) << o.last.error;
      }
      ++ended;
    }
    EXPECT_EQ(ended, 64);
    EXPECT_EQ(used_blocks_when_idle(*s.engine), 0) << "round " << round;
  }
  EXPECT_GT(s.engine->metrics().prefix_hit_tokens, 0u);
}

TEST_F(EngineTest, ReportsMetricsSlotsAndProps) {
  Server s(1024, 2);
  const auto prompt = tokens(kStory);
  wait_done(s.engine->submit(greedy(prompt, 5)));
  wait_done(s.engine->submit(greedy(prompt, 5)));
  ASSERT_EQ(used_blocks_when_idle(*s.engine), 0);
  const std::string text = s.engine->metrics_text();
  for (const char* name :
       {"llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", "llamacpp:prompt_tokens_seconds",
        "llamacpp:predicted_tokens_seconds", "llamacpp:kv_cache_usage_ratio", "llamacpp:kv_cache_tokens",
        "llamacpp:requests_processing", "llamacpp:requests_deferred", "strix:kv_blocks_free", "strix:kv_blocks_cached",
        "strix:kv_blocks_total", "strix:prefix_cache_hits_tokens_total"}) {
    EXPECT_NE(text.find(std::string("\n") + name + " "), std::string::npos) << name << "\n" << text;
    EXPECT_NE(text.find(std::string("# TYPE ") + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(text.find("\nllamacpp:tokens_predicted_total 10\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nllamacpp:requests_processing 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nstrix:kv_blocks_used 0\n"), std::string::npos) << text;
  const auto slots = s.engine->slots_json();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0]["id"], 0);
  EXPECT_EQ(slots[1]["n_ctx"], 1024);
  EXPECT_FALSE(slots[0]["is_processing"].get<bool>());
  const auto props = s.engine->props_json();
  EXPECT_EQ(props["total_slots"], 2);
  EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 1024);
  // while a request runs, its slot says so
  GenRequest r = greedy(prompt, 100000, /*ignore_eos=*/true);
  auto st = s.engine->submit(std::move(r));
  bool seen = false;
  for (int i = 0; i < 2000 && !seen; ++i) {
    for (const auto& sl : s.engine->slots_json()) {
      if (sl["is_processing"].get<bool>() && sl["n_prompt_tokens"] == static_cast<int>(prompt.size())) seen = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(seen);
  st->cancel();
  wait_done(st);
}

}  // namespace
