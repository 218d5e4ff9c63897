// llama-server's id_slot in the Engine, in-process on stories260K: a request
// pinned to a busy slot waits for it even while another slot is free, does not
// hold up the requests queued behind it, and runs once the slot's request ends;
// /slots (slots_json) shows the pinned slot busy and the free one idle
// meanwhile. The order in which requests end is recorded on the engine thread
// (the streams' notify callbacks run there, in push order), so no timing is
// assumed. Negative control: unpinned, the same request runs at once in the
// free slot. Out-of-range ids are a 400 naming id_slot.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "models/model.h"
#include "runtime/context.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "server/engine.h"
#include "server/server_process.h"
#include "tokenizer/tokenizer.h"

namespace {

using strix::server::Engine;
using strix::server::Finish;
using strix::server::GenEvent;
using strix::server::GenRequest;
using strix::server::GenStream;

const server_test::StoriesEngineModel* model() { return &server_test::stories_engine_model(); }

GenRequest request(int32_t n_predict, int32_t id_slot) {
  GenRequest r;
  r.prompt = model()->tk->tokenize("Once upon a time", true, false);
  strix::sampling::Params p;
  p.temp = 0.0f;
  p.ignore_eos = true;  // the long request runs until it is cancelled
  r.sampler = std::make_unique<strix::sampling::Sampler>(p, *model()->tk, 16384);
  r.n_predict = n_predict;
  r.id_slot = id_slot;
  return r;
}

// Records which streams ended, in the order the engine ended them.
struct EndOrder {
  std::mutex mu;
  std::vector<std::string> names;
  std::vector<GenEvent> last;
  void watch(const std::shared_ptr<GenStream>& s, const std::string& name) {
    GenStream* raw = s.get();
    const auto drain = [this, raw, name] {
      for (GenEvent& e : raw->take()) {
        if (!e.done) continue;
        std::lock_guard<std::mutex> lock(mu);
        names.push_back(name);
        last.push_back(e);
      }
    };
    s->set_notify(drain);
    drain();  // what it pushed before the callback was set
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return names.size();
  }
  bool wait(size_t n) {
    for (int i = 0; i < 20000 && count() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return count() >= n;
  }
};

class IdSlotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (server_test::stories_model().empty()) GTEST_SKIP() << "../shared/data/stories260K.gguf is absent";
    ctx_ = std::make_unique<strix::Context>(
        *model()->model, strix::ContextOptions{.n_ctx = 16384, .n_ubatch = 512, .n_threads = 1, .n_seq_max = 2});
    engine_ = std::make_unique<Engine>(*ctx_, *model()->tk, Engine::Options{.n_parallel = 2});
  }
  void TearDown() override {
    if (engine_) engine_->stop();
  }
  // Waits until /slots shows slot 1 busy, slot 0 idle and `queued` requests waiting.
  bool slot1_busy_slot0_idle(int queued) {
    for (int i = 0; i < 20000; ++i) {
      const nlohmann::json s = engine_->slots_json();
      if (s[1]["is_processing"] == true && s[0]["is_processing"] == false && engine_->stats().queued == queued) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }
  EndOrder order;  // outlives TearDown's stop(), which may still notify
  std::unique_ptr<strix::Context> ctx_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(IdSlotTest, pinned_request_waits_for_its_slot) {
  // long: pinned to slot 1, ends only when cancelled; same: also pinned to 1; other: any slot
  auto long_run = engine_->submit(request(-1, 1));
  order.watch(long_run, "long");
  auto same = engine_->submit(request(4, 1));
  order.watch(same, "same");
  auto other = engine_->submit(request(4, -1));
  order.watch(other, "other");
  // `other` is not held up by `same` waiting in front of it: it takes slot 0 and ends
  ASSERT_TRUE(order.wait(1));
  // `same` still waits although slot 0 is free now
  EXPECT_TRUE(slot1_busy_slot0_idle(1)) << engine_->slots_json().dump();
  long_run->cancel();
  ASSERT_TRUE(order.wait(3));
  EXPECT_EQ(order.names, (std::vector<std::string>{"other", "long", "same"}));
  EXPECT_EQ(order.last[1].finish, Finish::kError);  // cancelled
  EXPECT_EQ(order.last[2].finish, Finish::kLimit);
  EXPECT_EQ(order.last[2].n_gen, 4);
  long_run->set_notify(nullptr);
  same->set_notify(nullptr);
  other->set_notify(nullptr);
}

TEST_F(IdSlotTest, unpinned_request_runs_at_once_negative_control) {
  auto long_run = engine_->submit(request(-1, 1));
  order.watch(long_run, "long");
  auto any = engine_->submit(request(4, -1));
  order.watch(any, "any");
  ASSERT_TRUE(order.wait(1));
  EXPECT_EQ(order.names[0], "any");  // ran in slot 0 while slot 1 was busy
  EXPECT_TRUE(slot1_busy_slot0_idle(0));
  long_run->cancel();
  ASSERT_TRUE(order.wait(2));
  EXPECT_EQ(order.names, (std::vector<std::string>{"any", "long"}));
  long_run->set_notify(nullptr);
  any->set_notify(nullptr);
}

TEST_F(IdSlotTest, out_of_range_is_a_400_naming_id_slot) {
  for (int32_t bad : {2, 7, -2}) {
    try {
      engine_->submit(request(1, bad));
      ADD_FAILURE() << "id_slot " << bad << " was accepted";
    } catch (const strix::server::ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.body()["error"]["param"], "id_slot");
    }
  }
  // the valid ones run
  auto a = engine_->submit(request(2, 0));
  order.watch(a, "a");
  auto b = engine_->submit(request(2, -1));
  order.watch(b, "b");
  ASSERT_TRUE(order.wait(2));
  for (const GenEvent& e : order.last) EXPECT_EQ(e.finish, Finish::kLimit);
  a->set_notify(nullptr);
  b->set_notify(nullptr);
}

}  // namespace
